"""The pictures of the docs and the assets some benchmarks measure, apart from the
scenarios (not in the registry, not smoke-tested: they need the shared assets, Cycles or
matplotlib). Each runs as a module from the repository root:

    bash dev python -m bench.pictures.render_readme_contacts     # docs/contacts_makehuman_f25.png
    bash dev python -m bench.pictures.render_highlight           # docs/highlight_makehuman_f25.png
    bash dev python -m bench.pictures.render_sphere_set          # docs/sphere_set_posed.png
    bash dev python -m bench.pictures.save_subdivided --level 2 --out out/makehuman_428k.blend
"""
