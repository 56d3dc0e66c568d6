"""The repository is a valid Blender extension: the manifest validates (tags included), the
zip builds with Blender's own builder, and the built zip installs, enables, registers and
unregisters cleanly, twice."""
import importlib
import os
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.blender
REPO = Path(__file__).resolve().parents[2]


def operator_registered(bpy, name: str) -> bool:
    try:
        getattr(bpy.ops.skin_collide, name).get_rna_type()
    except KeyError:
        return False
    return True


@pytest.fixture(scope="module")
def bl_ext_cli():
    bpy = pytest.importorskip("bpy")
    scripts = bpy.utils.system_resource("SCRIPTS")
    sys.path.insert(0, os.path.join(scripts, "addons_core", "bl_pkg"))
    from bl_pkg import bl_extension_cli

    tags = os.path.join(scripts, "modules", "_bpy_internal", "extensions", "tags.py")
    return bl_extension_cli, tags


def test_manifest_validates_with_tags(bl_ext_cli, capsys):
    cli, tags = bl_ext_cli
    assert os.path.isfile(tags)
    assert cli.cli_extension_handler(["validate", "--valid-tags", tags, str(REPO)]) == 0


def test_manifest_validator_rejects_a_bad_tag(bl_ext_cli, tmp_path):
    cli, tags = bl_ext_cli
    text = (REPO / "blender_manifest.toml").read_text().replace('"Rigging"', '"Not A Tag"')
    (tmp_path / "blender_manifest.toml").write_text(text)
    (tmp_path / "__init__.py").write_text("def register(): pass\ndef unregister(): pass\n")
    assert cli.cli_extension_handler(["validate", "--valid-tags", tags, str(tmp_path)]) != 0


@pytest.fixture(scope="module")
def built_zip(bl_ext_cli, tmp_path_factory):
    cli, tags = bl_ext_cli
    out = tmp_path_factory.mktemp("dist")
    assert cli.cli_extension_handler(["build", "--valid-tags", tags, "--source-dir", str(REPO),
                                      "--output-dir", str(out)]) == 0
    zips = list(out.glob("skin_collide-*.zip"))
    assert len(zips) == 1
    return zips[0]


def test_zip_holds_the_addon_and_no_tests(built_zip):
    names = zipfile.ZipFile(built_zip).namelist()
    for needed in ("blender_manifest.toml", "__init__.py", "core/skinning.py",
                   "addon/extract/__init__.py", "operators/doctor.py", "panels/main_panel.py"):
        assert needed in names
    assert not [n for n in names if n.startswith(("tests/", "bench/", ".venv/", ".ci/", "farm/"))]
    assert "farm_commands.py" in names                 # cli.py registers farm-commands


def test_install_enable_and_disable_twice(built_zip, tmp_path):
    import addon_utils
    import bpy

    repo_dir = tmp_path / "repo"
    with zipfile.ZipFile(built_zip) as z:
        z.extractall(repo_dir / "skin_collide")
    prefs = bpy.context.preferences
    repo = prefs.extensions.repos.new(name="skin_collide_test", module="sc_test",
                                      custom_directory=str(repo_dir), source="USER")
    module = "bl_ext.sc_test.skin_collide"
    try:
        for _ in range(2):
            mod = addon_utils.enable(module, default_set=True, handle_error=None)
            assert mod is not None, "the built extension did not enable"
            assert module in prefs.addons
            assert hasattr(bpy.types, "SKINCOLLIDE_PT_main")
            assert hasattr(bpy.types.Scene, "skin_collide")
            assert operator_registered(bpy, "doctor")
            addon_utils.disable(module, default_set=True, handle_error=None)
            assert module not in prefs.addons
            assert not hasattr(bpy.types, "SKINCOLLIDE_PT_main")
            assert not hasattr(bpy.types.Scene, "skin_collide")
            assert not operator_registered(bpy, "doctor")
    finally:
        prefs.extensions.repos.remove(repo)


def test_register_and_unregister_twice_directly():
    bpy = pytest.importorskip("bpy")
    pkg = importlib.import_module("skin_collide")
    for _ in range(2):
        pkg.register()
        assert operator_registered(bpy, "doctor")
        pkg.unregister()
        assert not operator_registered(bpy, "doctor")


def test_every_package_is_listed_in_pyproject():
    """A package directory missing from pyproject's list would be left out of a wheel or a
    non-editable install (an editable one hides the omission)."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"skin_collide"}
    for init in root.rglob("__init__.py"):
        rel = init.parent.relative_to(root)
        if rel.parts and rel.parts[0] in ("core", "addon", "operators", "panels"):
            found.add(".".join(("skin_collide",) + rel.parts))
    assert found - listed == set(), "add these packages to pyproject.toml"


def test_the_manifest_names_no_placeholder_website():
    """Blender shows `website` as a link on the extension's page: a real address or none."""
    import re

    text = (REPO / "blender_manifest.toml").read_text()
    site = re.search(r'^website\s*=\s*"([^"]*)"', text, re.M)
    assert site is None or not re.search(r"example\.(invalid|com|org)|localhost", site.group(1))


def test_a_script_that_registers_the_addon_exits_cleanly():
    """The pip bpy 4.2 LTS segfaulted at interpreter exit while the add-on was registered
    (a PropertyGroup with an update callback); register() now unregisters at exit."""
    import subprocess

    bpy = pytest.importorskip("bpy")
    if bpy.app.binary_path:
        pytest.skip("a subprocess of the pip bpy module")
    code = "import bpy, skin_collide; skin_collide.register(); print('registered')"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0 and "registered" in res.stdout, res.stderr[-2000:]


ENABLE_AND_EXIT = """
import sys
import bpy
import addon_utils

module = sys.argv[1]
if module.startswith("bl_ext."):
    # The extension as Blender installs it: a user repository holding it as skin_collide/.
    bpy.context.preferences.extensions.repos.new(
        name="sc_exit", module=module.split(".")[1], custom_directory=sys.argv[2],
        source="USER")
mod = addon_utils.enable(module, default_set=True, handle_error=None)
assert mod is not None and hasattr(bpy.types.Object, "skin_collide"), module
print("enabled, exiting", flush=True)
"""


@pytest.mark.parametrize("module", ["skin_collide", "bl_ext.sc_exit.skin_collide"])
def test_a_script_that_enables_the_addon_exits_without_a_traceback(tmp_path, module):
    """Issue 40, item 7: with the pip bpy, an add-on a script enabled through `addon_utils`
    is unregistered twice when the script ends (by skin_collide's atexit handler, then by
    Blender's own disabling of add-ons); the second must be a no-op, not a traceback."""
    import subprocess

    bpy = pytest.importorskip("bpy")
    if bpy.app.binary_path:
        pytest.skip("a subprocess of the pip bpy module")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "skin_collide").symlink_to(REPO, target_is_directory=True)
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "user"))
    res = subprocess.run([sys.executable, "-c", ENABLE_AND_EXIT, module, str(tmp_path / "repo")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    out = res.stdout
    assert "enabled, exiting\n" in out, out[-3000:]
    after = out.split("enabled, exiting\n", 1)[1]
    assert after == "", after                  # nothing at exit: no "Exception in ...", no traceback
    assert res.returncode == 0, out[-3000:]
