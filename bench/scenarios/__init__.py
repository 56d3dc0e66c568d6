"""One module per scenario; each calls `bench.registry.register` when imported."""
