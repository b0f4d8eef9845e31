"""nn-meter's PEP 517 build backend: `pip install .` runs the project's own CMake build and packs what
`cmake --install` puts into a staging prefix as a wheel. Standard library only, so pip needs nothing from an
index to build (pyproject.toml: requires = []).

The wheel keeps the install prefix's layout, so no RPATH is rewritten: the package goes to site-packages
(lib/python3.X/site-packages, as deep as the dist-packages folder CMake installs it to, so _nnmeter's
$ORIGIN RPATH reaches <prefix>/lib), and the rest into the wheel's data folder, which pip installs into the
prefix itself (the virtual environment): lib/libnnmeter.so.*, libexec/nnmeter/nn-meter-worker (where the
library looks for it), the man page. The `nn-meter` program moves to libexec/nn-meter (one level below the
prefix, as bin/ is, so its RPATH still holds); bin/nn-meter is a console script (nn_meter/_cli.py) that runs
it with Python plugins pointed at this environment.

Config settings (pip install . --config-settings=KEY=VALUE):
  build-dir   the CMake build tree (default: build-pip/ in the checkout; relative paths are taken from the
              checkout). An existing tree is reused as it is configured; a new one is configured Release
              without tests and benchmarks. CMAKE_BUILD_PARALLEL_LEVEL sets the jobs (default: all CPUs).
"""
import base64
import hashlib
import importlib.machinery
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
import zipfile

SOURCE = pathlib.Path(__file__).resolve().parents[2]
CLI_IN_WHEEL = "libexec/nn-meter"  # python/nn_meter/_cli.py runs it from there
SETTINGS = ("build-dir",)


class BuildError(Exception):
    """A one-line reason the wheel cannot be built, with what to do about it."""


# --- metadata ---------------------------------------------------------------------------------------------

def _project():
    with open(SOURCE / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    cmake_lists = (SOURCE / "CMakeLists.txt").read_text()
    version = re.search(r"project\(\s*nnmeter\s+VERSION\s+([0-9.]+)", cmake_lists)
    if version is None:
        raise BuildError("CMakeLists.txt has no `project(nnmeter VERSION x.y.z)` to take the version from")
    return {**project, "version": version.group(1)}


def _dist_info(project):
    return f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"


def _metadata_files(project):
    """{name: text} of the .dist-info files other than WHEEL and RECORD."""
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project['description']}", f"Requires-Python: {project['requires-python']}"]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements]
    scripts = "".join(f"{name} = {target}\n" for name, target in project.get("scripts", {}).items())
    return {"METADATA": "\n".join(lines) + "\n", "entry_points.txt": f"[console_scripts]\n{scripts}"}


def _write_metadata(directory, project):
    dist_info = pathlib.Path(directory) / _dist_info(project)
    dist_info.mkdir(parents=True, exist_ok=True)
    for name, text in _metadata_files(project).items():
        (dist_info / name).write_text(text)
    return dist_info.name


# --- the CMake build --------------------------------------------------------------------------------------

def _settings(config_settings):
    settings = dict(config_settings or {})
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise BuildError(f"unknown config setting '{unknown[0]}': nn-meter's build backend takes {', '.join(SETTINGS)}")
    build_dir = settings.get("build-dir") or "build-pip"
    if not isinstance(build_dir, str):
        raise BuildError("give --config-settings=build-dir=DIR once")
    return SOURCE / os.path.expanduser(build_dir)


def _run(argv, what):
    print("(nn-Meter) " + " ".join(argv), file=sys.stderr, flush=True)
    try:
        # CMake's output goes to stderr: pip reads a backend's stdout for nothing but shows both on failure.
        subprocess.run(argv, check=True, stdout=sys.stderr)
    except subprocess.CalledProcessError as e:
        raise BuildError(f"{what} failed (exit {e.returncode}, output above); scripts/install-deps.sh installs "
                         "the Debian packages nn-meter builds with") from None


def _cache(build_dir):
    """CMakeCache.txt as {name: value}."""
    entries = {}
    for line in (build_dir / "CMakeCache.txt").read_text().splitlines():
        match = re.match(r"([^#/][^:=]*):[A-Z]+=(.*)", line)
        if match:
            entries[match.group(1)] = match.group(2)
    return entries


def _build_and_stage(build_dir, staging):
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildError("cmake not found: apt-get install cmake (scripts/install-deps.sh installs every build "
                         "dependency)")
    if not (build_dir / "CMakeCache.txt").is_file():
        # The interpreter behind the environment's link: the tree outlives the environment it was built for.
        _run([cmake, "-S", str(SOURCE), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release", "-DNNMETER_BUILD_TESTS=OFF",
              "-DNNMETER_BUILD_BENCH=OFF", f"-DPython3_EXECUTABLE={os.path.realpath(sys.executable)}"],
             "configuring nn-meter")
    cache = _cache(build_dir)
    if pathlib.Path(cache.get("CMAKE_HOME_DIRECTORY", "")).resolve() != SOURCE:
        raise BuildError(f"{build_dir} is the build tree of {cache.get('CMAKE_HOME_DIRECTORY')}, not of {SOURCE}: "
                         "give another build-dir")
    if cache.get("NNMETER_SANITIZE") == "ON":
        raise BuildError(f"{build_dir} is a sanitizer build (NNMETER_SANITIZE=ON), whose module cannot load in a "
                         "plain interpreter: give another build-dir")
    if not (build_dir / "python" / "CMakeFiles" / "_nnmeter.dir").is_dir():
        raise BuildError(f"{build_dir} builds no Python module: apt-get install python3-dev pybind11-dev, then give "
                         "a new build-dir (or reconfigure this one with -DNNMETER_BUILD_PYTHON=ON)")
    # Only what the install rules take: a reused tree does not build its tests or benchmarks.
    targets = ["nn-meter", "_nnmeter"] + ([] if cache.get("HELP2MAN", "-NOTFOUND").endswith("-NOTFOUND") else ["man"])
    jobs = [] if os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") else ["-j", str(os.cpu_count() or 1)]
    _run([cmake, "--build", str(build_dir), *jobs, "--target", *targets], "building nn-meter")
    # The development namelink (libnnmeter.so) is the `dev` component: a wheel is the runtime.
    _run([cmake, "--install", str(build_dir), "--prefix", str(staging), "--component", "Unspecified"],
         "installing nn-meter into the staging prefix")
    return cache


# --- the wheel --------------------------------------------------------------------------------------------

def _tag():
    if sys.implementation.name != "cpython":
        raise BuildError(f"nn-meter's module is built for CPython, not {sys.implementation.name}")
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return f"{python}-{python}-{re.sub(r'[^A-Za-z0-9]', '_', sysconfig.get_platform())}"


def _wheel_entries(staging, cache, data):
    """[(path in the wheel, staged file)]: the Python package at the wheel's root, the rest under `data`. A
    wheel holds no symlinks: a library is packed once, under the name programs load it by (its SONAME
    link), and the file the link names is left out. So are the CMake package and the pkg-config file, which
    link libnnmeter through that file and the namelink (`cmake --install` installs them). The headers and
    the plugin helper stay: plugins never link libnnmeter."""
    python_dir = staging / cache["NNMETER_PYTHON_INSTALL_DIR"]
    libdir = cache["CMAKE_INSTALL_LIBDIR"]
    linking = [staging / libdir / "cmake", staging / libdir / "pkgconfig"]
    cli = staging / cache["CMAKE_INSTALL_BINDIR"] / "nn-meter"
    paths = sorted(p for p in staging.rglob("*") if p.is_file() or p.is_symlink())
    link_targets = {p.resolve() for p in paths if p.is_symlink()}
    entries = []
    for path in paths:
        if (not path.is_symlink() and path.resolve() in link_targets) or any(d in path.parents for d in linking):
            continue
        if python_dir in path.parents:
            name = path.relative_to(python_dir).as_posix()
        elif path == cli:
            name = f"{data}/{CLI_IN_WHEEL}"
        else:
            name = f"{data}/{path.relative_to(staging).as_posix()}"
        entries.append((name, path.resolve()))
    _check_layout(entries, python_dir, staging, libdir)
    return entries


def _check_layout(entries, python_dir, staging, libdir):
    names = [name for name, _ in entries]
    modules = [n for n in names if n.startswith("nn_meter/_nnmeter.")]
    if [m[len("nn_meter/_nnmeter"):] for m in modules] not in [[s] for s in importlib.machinery.EXTENSION_SUFFIXES]:
        raise BuildError(f"the build dir's module ({', '.join(modules)}) is not one for {sys.executable}: give a "
                         "build-dir configured with this interpreter")
    if not any(n.endswith(CLI_IN_WHEEL) for n in names):
        raise BuildError("the build installed no nn-meter program")
    # _nnmeter's RPATH leads from the package to <prefix>/<libdir>: it holds where pip installs the package
    # and the data folder only if site-packages sits where CMake put the package.
    rpath = os.path.relpath(staging / libdir, python_dir / "nn_meter")
    installed = os.path.normpath(os.path.join(sysconfig.get_path("platlib"), "nn_meter", rpath))
    if installed != os.path.normpath(os.path.join(sysconfig.get_path("data"), libdir)):
        raise BuildError(f"this environment's site-packages ({sysconfig.get_path('platlib')}) does not lie where "
                         f"the build put the package ({python_dir.relative_to(staging)}): its module would not "
                         "find libnnmeter")


def _record_line(name, content):
    digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(content)}"


def _pack(wheel_path, entries, text_files, dist_info):
    """Writes the wheel: `entries` [(name, file)] with their modes, `text_files` {name: text}, then RECORD."""
    record = []
    tmp = wheel_path.with_name(wheel_path.name + ".part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        def add(name, content, mode):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, content)
            record.append(_record_line(name, content))

        for name, path in entries:
            add(name, path.read_bytes(), 0o755 if path.stat().st_mode & 0o111 else 0o644)
        for name, text in text_files.items():
            add(name, text.encode(), 0o644)
        record_name = f"{dist_info}/RECORD"
        record.append(f"{record_name},,")
        add(record_name, ("\n".join(record) + "\n").encode(), 0o644)
    os.replace(tmp, wheel_path)


# --- PEP 517 hooks ----------------------------------------------------------------------------------------

def _one_line_errors(hook):
    """A BuildError ends the hook with its one line instead of a traceback (pip shows the hook's output)."""
    def run(*args, **kwargs):
        try:
            return hook(*args, **kwargs)
        except BuildError as e:
            raise SystemExit(f"(nn-Meter) error: {e}") from None
    return run


def get_requires_for_build_wheel(config_settings=None):
    return []


@_one_line_errors
def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_metadata(metadata_directory, _project())


@_one_line_errors
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    build_dir = _settings(config_settings)
    tag = _tag()
    dist = project["name"].replace("-", "_")
    with tempfile.TemporaryDirectory(prefix="nn-meter-wheel-") as tmp:
        staging = pathlib.Path(tmp) / "prefix"
        cache = _build_and_stage(build_dir, staging)
        entries = _wheel_entries(staging, cache, f"{dist}-{project['version']}.data/data")
        dist_info = _dist_info(project)
        text_files = {f"{dist_info}/{name}": text for name, text in _metadata_files(project).items()}
        text_files[f"{dist_info}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: nn-meter's nnmeter_wheel.py\n"
                                            f"Root-Is-Purelib: false\nTag: {tag}\n")
        wheel_name = f"{dist}-{project['version']}-{tag}.whl"
        _pack(pathlib.Path(wheel_directory) / wheel_name, entries, text_files, dist_info)
    return wheel_name


@_one_line_errors
def build_sdist(sdist_directory, config_settings=None):
    raise BuildError("nn-meter has no source distribution: install from a checkout (pip install "
                     "/path/to/nn-meter), which builds the wheel in place")
