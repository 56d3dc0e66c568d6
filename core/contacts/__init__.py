"""What a frame's colliding pairs mean to the user: contacts as named polygon pairs
(`pairs`: canonical keys, rest contacts, allow-lists, pair episodes), contacts grouped
where the skin crosses (`groups`) with their intersection curves (`curves`) and bones
(`bones`), the contact record and its JSON and CSV (`contact`), episodes by bone pair
(`episodes`), and the user's filters on them (`filters`). Finding the pairs is
`core.scan`'s job; writing them to a report is `core/report/`'s."""
