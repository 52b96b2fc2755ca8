"""The Python package's shape: its modules import each other without a
cycle (at module level or inside functions, where a cycle hides), and no
module uses another's private helpers (a `_name` imported from, or read
off, a sibling module). Read from the sources with `ast`; nothing is
imported."""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python" / "sparse_opt"


def _modules():
    """{dotted name: path} of every module of the package."""
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _resolve(module, level, target, is_package):
    """The dotted name `from <level dots><target>` means inside `module`."""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[:-(level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(mods):
    """{module: {imported module: [(line, private names used)]}} within the
    package."""
    graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        edges, aliases = {}, {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                src = _resolve(name, node.level, node.module, is_package) if node.level else node.module or ""
                if not src.startswith("sparse_opt"):
                    continue
                for a in node.names:
                    sub = src + "." + a.name
                    if sub in mods:  # `from . import fx_ops`: the module itself
                        edges.setdefault(sub, []).append((node.lineno, []))
                        aliases[a.asname or a.name] = sub
                    else:
                        private = [a.name] if a.name.startswith("_") and not a.name.startswith("__") else []
                        edges.setdefault(src, []).append((node.lineno, private))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("sparse_opt") and a.name in mods:
                        edges.setdefault(a.name, []).append((node.lineno, []))
                        if a.asname:
                            aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                edges.setdefault(aliases[node.value.id], []).append((node.lineno, [node.attr]))
        edges.pop(name, None)
        graph[name] = edges
    return graph


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, {})):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_the_package_has_modules():
    mods = _modules()
    assert "sparse_opt.importers.fx_ops" in mods and "sparse_opt.runtime" in mods


def test_no_import_cycles():
    graph = _imports(_modules())
    # A package's __init__ re-exports its modules; a module importing the
    # package itself (`from . import X` where X is defined in __init__)
    # would close a cycle through it, and is counted like any other edge.
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_no_private_helpers_across_modules():
    uses = []
    for module, edges in _imports(_modules()).items():
        for target, refs in edges.items():
            for line, private in refs:
                uses += ["%s:%d uses %s.%s" % (module, line, target, p) for p in private]
    assert not uses, "\n".join(uses)
