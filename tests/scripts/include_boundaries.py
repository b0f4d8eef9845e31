#!/usr/bin/env python3
"""The include boundaries the README's "Architecture" section promises, checked on the source tree:

1. each folder under src/ includes private headers only of folders in lower layers (LAYERS, top first, as the
   README draws them), so calls and data flow one way and no two folders depend on each other;
2. public headers (include/nnmeter/) include only other public headers and no private dependency;
3. every public header is implemented by one folder, and a folder calls a function (or a class's out-of-line
   member) declared in a public header only when the folder that defines it is below it: the layers hold
   for calls through public headers as well as for private includes. A name is matched by its declaration
   at namespace scope in include/nnmeter/ and its definition at column 0 of a .cpp file; overloads defined
   in several folders (to_string) are not followed;
4. namespaces follow folders: code under src/<folder>/ (and its subfolders) declares its names in `nnmeter`
   (the public API it implements), `nnmeter::<folder or subfolder>` or, for a file's own small namespace,
   `nnmeter::<file name>` (common/io.h: nnmeter::io); a third-party namespace only to specialise or declare.

Usage: include_boundaries.py SOURCE_DIR. Prints "ok" and exits 0, or lists every violation and exits 1. It
first checks itself on a small tree with known violations, so a broken checker cannot pass.
"""
import pathlib
import re
import sys
import tempfile

LAYERS = [
    ["cli", "worker"],
    ["builder"],
    ["evaluate"],
    ["fusion", "workspace"],
    ["prediction", "profiling", "sampling", "backends"],
    ["workspace_config"],
    ["detection", "kernels", "networks", "regressors"],
    ["registry"],
    ["backend_config"],
    ["onnx_io"],
    ["common"],
]
QUOTED = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ANGLED = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)
FOREIGN_NAMESPACES = {"std", "YAML", "onnx", "nlohmann"}
# A function declared at namespace scope of a public header, and a struct or class defined there.
PUBLIC_FUNCTION = re.compile(r'^(?!\s)(?!using|typedef|#|struct|class|enum|template|namespace|inline|constexpr|static|return)'
                             r'[^\n;{}()]*?\b([A-Za-z_]\w*)\s*\([^;{]*\)\s*(?:const)?\s*;', re.M)
PUBLIC_CLASS = re.compile(r'^(?:struct|class)\s+([A-Z]\w*)\s*[:{]', re.M)
# A definition at column 0 of a .cpp file: `Type name(...) {` or `Type Class::name(...) {`.
DEFINITION = re.compile(r'^(?!\s)[^\n;{}]*?\b(?:([A-Z]\w*)::)?([A-Za-z_]\w*)\s*\([^;]*?\)\s*(?:const\s*)?(?:noexcept\s*)?\{',
                        re.M)
NAMESPACE_TOKEN = re.compile(r'namespace\s+([A-Za-z_][\w:]*)?\s*\{|\{|\}')
PRIVATE_DEPENDENCIES = ("onnx/", "oneapi/", "dnnl", "xgboost/", "yaml-cpp/", "spdlog/", "fmt/", "CLI/", "google/",
                        "flatbuffers/", "armnn")


def sources(folder):
    return sorted(p for p in folder.rglob("*") if p.suffix in (".h", ".cpp", ".hpp"))


def code_only(text):
    """The text without comments and literals, so that only real braces count."""
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    text = re.sub(r'R"(\w*)\((.*?)\)\1"', '""', text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)


def namespace_violations(src, path):
    allowed = set(path.relative_to(src).parts[:-1]) | {path.stem}
    stack, out = [], []
    for m in NAMESPACE_TOKEN.finditer(code_only(path.read_text(errors="replace"))):
        token = m.group(0)
        if token == "}":
            if stack:
                stack.pop()
            continue
        if token == "{":
            stack.append([])
            continue
        stack.append(m.group(1).split("::") if m.group(1) else [])
        if not m.group(1):
            continue
        full = [name for names in stack for name in names]
        if full[0] in FOREIGN_NAMESPACES:
            continue
        if full[0] != "nnmeter" or (len(full) > 1 and full[1] not in allowed):
            out.append(f"{path.relative_to(src.parent)} declares namespace {'::'.join(full)}: code under "
                       f"src/{'/'.join(path.relative_to(src).parts[:-1])}/ belongs in nnmeter or "
                       f"nnmeter::{{{', '.join(sorted(allowed))}}}")
    return out


def public_names(header_text):
    """Functions as `name`, classes as `Class::` (a class is followed through its out-of-line members)."""
    text = code_only(header_text)
    return {m.group(1) for m in PUBLIC_FUNCTION.finditer(text)} | {m.group(1) + "::" for m in PUBLIC_CLASS.finditer(text)}


def declaration_violations(root, src, level):
    headers = {path: public_names(path.read_text(errors="replace")) for path in sources(root / "include" / "nnmeter")}
    declared = set().union(*headers.values()) if headers else set()
    defined_in = {}
    texts = {path: code_only(path.read_text(errors="replace")) for path in sources(src)}
    for path, text in texts.items():
        folder = path.relative_to(src).parts[0]
        if path.suffix != ".cpp":
            continue
        for m in DEFINITION.finditer(text):
            name = m.group(1) + "::" if m.group(1) else m.group(2)
            if name in declared:
                defined_in.setdefault(name, set()).add(folder)
    owner = {name: next(iter(folders)) for name, folders in defined_in.items() if len(folders) == 1}
    out = []
    for path, names in headers.items():
        folders = sorted({owner[n] for n in names if n in owner})
        if len(folders) > 1:
            by = {f: sorted(n for n in names if owner.get(n) == f)[:3] for f in folders}
            out.append(f"public header {path.relative_to(root)} is implemented in several folders: "
                       + "; ".join(f"src/{f}/ ({', '.join(n)})" for f, n in by.items()))
    for path, text in texts.items():
        folder = path.relative_to(src).parts[0]
        if folder not in level:
            continue
        for name, other in owner.items():
            if other == folder or other not in level or level[other] > level[folder]:
                continue
            use = r'\b' + re.escape(name) if name.endswith("::") else r'(?<![\w.>:])' + re.escape(name) + r'\s*\('
            if re.search(use, text):
                out.append(f"{path.relative_to(root)} calls {name.rstrip(':')}, defined in src/{other}/: {folder}/ may "
                           f"only call folders below it, and {other}/ is not")
    return out


def violations(root, layers):
    root = pathlib.Path(root)
    src = root / "src"
    level = {folder: i for i, row in enumerate(layers) for folder in row}
    out = []
    folders = sorted(p.name for p in src.iterdir() if p.is_dir())
    for folder in folders:
        if folder not in level:
            out.append(f"src/{folder}/ is in no layer: add it to LAYERS here and to the README's Architecture drawing")
            continue
        for path in sources(src / folder):
            out.extend(namespace_violations(src, path))
            for inc in QUOTED.findall(path.read_text(errors="replace")):
                other = inc.split("/", 1)[0]
                if "/" not in inc or other == folder or other not in folders:
                    continue
                if level.get(other, -1) <= level[folder]:
                    out.append(f"{path.relative_to(root)} includes \"{inc}\": {folder}/ may only include folders "
                               f"below it, and {other}/ is not")
    out.extend(declaration_violations(root, src, level))
    for path in sources(root / "include" / "nnmeter"):
        text = path.read_text(errors="replace")
        for inc in QUOTED.findall(text):
            if not inc.startswith("nnmeter/"):
                out.append(f"public header {path.relative_to(root)} includes the private header \"{inc}\"")
        for inc in ANGLED.findall(text):
            if inc.startswith(PRIVATE_DEPENDENCIES):
                out.append(f"public header {path.relative_to(root)} includes the private dependency <{inc}>")
    return out


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for rel, text in {"src/top/x.cpp": '#include "low/y.h"\nnamespace nnmeter::top {\nnamespace {}\n}\n',
                          "src/low/y.h": '#include "top/x.h"\nnamespace nnmeter {\nnamespace mid {\n}\n}\n'
                                         'namespace std { template <> struct hash<int>; }\n',
                          "src/low/sub/io.cpp": 'namespace nnmeter::sub { namespace io { void f() { if (1) {} } } }\n'
                                                '// namespace nnmeter::wrong {\nconst char* s = "namespace x {";\n',
                          "src/mid/z.cpp": '#include "mid2/w.h"\n', "src/mid2/w.h": "", "src/stray/s.cpp": "",
                          "include/nnmeter/p.h": '#include "low/y.h"\n#include <onnx/onnx_pb.h>\n',
                          # A call through a public header that runs up: low/ calls top/'s function.
                          "include/nnmeter/api.h": 'namespace nnmeter {\nint top_fn(int x);\nint low_fn();\n'
                                                   'struct Thing {\n  void go();\n};\n}\n',
                          "src/top/api.cpp": 'namespace nnmeter {\nint top_fn(int x) {\n  return low_fn() + x;\n}\n'
                                             'void Thing::go() {}\n}\n',
                          "src/low/api.cpp": 'namespace nnmeter {\nint low_fn() {\n  return top_fn(1);\n}\n}\n'}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        found = violations(root, [["top"], ["mid", "mid2"], ["low"]])
        expected = ['src/low/y.h includes "top/x.h"', 'src/mid/z.cpp includes "mid2/w.h"', "src/stray/ is in no layer",
                    "src/low/y.h declares namespace nnmeter::mid",
                    'includes the private header "low/y.h"', "includes the private dependency <onnx/onnx_pb.h>",
                    "src/low/api.cpp calls top_fn, defined in src/top/",
                    "include/nnmeter/api.h is implemented in several folders"]
        missing = [e for e in expected if not any(e in v for v in found)]
        if missing or len(found) != len(expected):
            sys.exit(f"the checker itself is broken: expected {expected}, found {found}")


def main():
    self_test()
    found = violations(sys.argv[1], LAYERS)
    for v in found:
        print(v)
    if found:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
