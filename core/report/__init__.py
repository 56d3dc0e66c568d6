"""Scan reports: the report model of a run (`model`), writing it safely (`writing`:
output-path checks, atomic and progressive JSON, JUnit XML), merging the reports of frame
chunks (`merge`) and cutting a frame range into those chunks (`chunks`). Pure Python over
the pipeline's results; what counts as a contact is decided in `core/contacts/`."""
