"""The sphere-set method and the fits it builds on. `method` is the collision method
`sphere-set` (a set animated with the skeleton, registered in `core.methods.registry`);
the rest fits a set whose union bounds the rest mesh: the variational fit of Wang et al.
2006 (`variational`, its phases in `seeding`, `flood_fill`, `clustering` and `cover`,
with `union_search` and `outside_volume`), the simple `baselines`, and
`types.SphereSet`, the result every fit returns. The sphere TREE and its refits are in
`core/bounds/`."""
