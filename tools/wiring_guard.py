"""The rule that keeps ``components/stack/program.py`` to wiring (issue #38): it decides nothing itself.

    python -m tools.wiring_guard [FILE ...]     # default: components/stack/program.py

A decision is a function of the config: which pools get which driver objects, what waits for what, a resource's
name, a namespace, whether a capability is built. Decisions live in the plan (``components.stack.plan`` and the
modules it calls, ``components.stack.wiring`` for the driver steps); the program reads the plan's results and
passes them to components. ``make lint`` runs this rule (and ``tests/stack/test_program_only_wires.py`` checks that
it catches each way below); the import-linter contract "The stack program imports no planning module"
(``pyproject.toml``) closes the same door at the module level.

The six ways a decision gets into the program, each a rule of its own name:

1. ``decider-import``: importing something that decides, at module level or lazily inside a function. The program
   imports component classes and their argument types, the plan's types, two wiring helpers
   (``components.base.dependency_graph``, ``components.base.runtime_mode.warning``), ``pulumi``, ``typing`` and
   ``dataclasses.dataclass``/``field``; never a function, a constant or another module of ours, nor any other
   module (``itertools``, ``importlib``...).
2. ``attribute-call``: calling a deciding function through a module or an attribute (``base.merge.deep_merge(...)``,
   ``m.f()`` after ``import components.x as m``, ``plan.mig.resources_per_node(pool)``), or through a value
   (``f = plan.driver_labels; f(node)``, ``getattr``, ``__import__``). Allowed: the platform seam
   (``plan.platform.cluster_access/create_nodes/label_nodes``), ``dependency_graph.install()``,
   ``pulumi.get_stack()``, mapping reads (``.items() .values() .keys() .get()``), the component classes and the
   program's own functions (whose bodies this rule checks too).
3. ``value-branch``: branching on a value. A comparison anywhere (``==``, ``!=``, ``<``, ``in``, ``is`` other than
   ``is None``/``is not None``); an ``if``, conditional expression or ``assert`` whose test is anything but the
   truthiness of a name or attribute, ``is None``/``is not None``, and ``not``/``and``/``or`` of those; any
   ``while``, ``match`` or ``try``; a branch table (a dict or list literal subscripted by a value).
4. ``inline-filter``: filtering or transforming a collection inline: a comprehension with an ``if`` clause, a set
   (a literal or a comprehension: it deduplicates), a slice or a constant index (``pools[0]``, ``.get("a100")``),
   or a call to a builtin that computes (``sorted``, ``filter``, ``map``, ``any``, ``all``, ``min``, ``max``,
   ``sum``, ``len``, ``set``, ``zip``, ``isinstance``...; only ``list``, ``tuple`` and ``dict`` are wiring).
5. ``inline-computation``: computing a value: arithmetic and any other binary or unary operator (``+`` on strings
   and lists included: unpack with ``[*a, *b]``), ``and``/``or``/``not`` outside a branch test, augmented
   assignment, string formatting (f-strings, ``%``, ``.format``, ``.join`` and every other ``str`` method),
   ``lambda``, and number or boolean literals (a timeout or a switch chosen inline). Resource names are the plan's
   (``Plan.driver_steps`` gives the steps' names); a fixed name as a plain string literal is wiring.
6. ``config-read``: reading a setting out of the stack config: an attribute or item two or more levels below it
   (``plan.config.smoke_test.enabled``), also through aliases (``stack = plan.config; stack.gpu_operator.namespace``,
   ``kubeflow = stack.kubeflow; kubeflow.enabled``, a local function's parameter, its return value); iterating
   or unpacking a section (``for name, group in plan.config.node_groups.items()``, ``[*plan.config.node_groups]``);
   and any branch test that reads the config (``if plan.config.kubeflow is not None``). Passing a whole section
   (``config=plan.config.node_agent``) is wiring. Every ``<expr>.config`` counts as the stack config, and a name
   that holds (part of) it anywhere in the module holds it everywhere: the guard errs towards reporting.

Exit codes: 0 the files only wire; 1 findings (one line each: ``FILE:LINE:COL: RULE: what``); 2 a file cannot be
read or parsed.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib
import inspect
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "components" / "stack" / "program.py"

#: Rule name -> what it forbids (the six ways; the module docstring says each in full).
RULES: dict[str, str] = {
    "decider-import": "imports something that decides (a function, a value or a module of ours, another library)",
    "attribute-call": "calls a function through a module, an attribute or a value",
    "value-branch": "branches on a value (a comparison, a computed test, while/match/try, a branch table)",
    "inline-filter": "filters or transforms a collection inline (a comprehension's if, a set, a slice, a builtin)",
    "inline-computation": "computes a value (an operator, string formatting, a lambda, a number or switch literal)",
    "config-read": "reads a setting out of the stack config (two levels below it, iterated, or in a branch test)",
}

#: Modules of ours the program may import as modules, and the functions it may import: they decide nothing.
WIRING_MODULES = frozenset({"components.base.dependency_graph"})
WIRING_HELPERS = frozenset({("components.base.runtime_mode", "warning")})
#: Calls through a module the program may make: (the module, the function).
WIRING_MODULE_CALLS = frozenset({("components.base.dependency_graph", "install"), ("pulumi", "get_stack")})
#: The platform seam (``components.stack.platforms.base.GpuPlatform``), called as ``plan.platform.<method>(...)``.
PLATFORM_SEAM = frozenset({"cluster_access", "create_nodes", "label_nodes"})
#: Reading a mapping: what the platform or a component returns, keyed by names the plan gives.
MAPPING_READS = frozenset({"items", "values", "keys", "get"})
#: Modules outside ours the program may import from, and the names (None: any name).
OTHER_IMPORTS: dict[str, frozenset[str] | None] = {
    "__future__": frozenset({"annotations"}),
    "typing": None,
    "collections.abc": None,
    "dataclasses": frozenset({"dataclass", "field"}),
}
#: Modules outside ours the program may import whole.
OTHER_MODULES = frozenset({"pulumi", "pulumi_kubernetes"})
#: Builtins that build a container from what they are given: wiring.
WIRING_BUILTINS = frozenset({"list", "tuple", "dict"})
#: Builtins that reach a function or a value by another door (``attribute-call``); every other builtin computes.
DOOR_BUILTINS = frozenset({"__import__", "eval", "exec", "compile", "getattr", "globals", "locals", "vars", "setattr"})
STR_METHODS = frozenset(name for name in dir(str) if not name.startswith("_")) - MAPPING_READS


@dataclass(frozen=True, order=True)
class Finding:
    """One way a decision got into the program."""

    line: int
    col: int
    rule: str
    message: str

    def format(self, path: str) -> str:
        return f"{path}:{self.line}:{self.col}: {self.rule}: {self.message}"


@dataclass
class _Imported:
    """A name the program bound by an import."""

    kind: str  # "class", "module", "helper", "typing", "forbidden"
    full_name: str


def check_file(path: Path) -> list[Finding]:
    """The findings of one file (the module it is named by resolves relative imports)."""
    try:
        module = ".".join(path.resolve().relative_to(ROOT).with_suffix("").parts)
    except ValueError:
        module = "components.stack.program"
    return check_source(path.read_text(), module=module)


def check_source(source: str, module: str = "components.stack.program") -> list[Finding]:
    """Every finding in ``source`` (the text of a program module called ``module``), sorted, one per line and rule."""
    checker = _Checker(ast.parse(source), module)
    checker.run()
    unique: dict[tuple[int, str], Finding] = {}
    for finding in sorted(checker.findings):
        unique.setdefault((finding.line, finding.rule), finding)
    return sorted(unique.values())


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


def _is_none_check(node: ast.Compare) -> bool:
    return (
        len(node.ops) == 1
        and isinstance(node.ops[0], ast.Is | ast.IsNot)
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value is None
    )


def _is_exception(name: str) -> bool:
    value = getattr(builtins, name, None)
    return inspect.isclass(value) and issubclass(value, BaseException)


def _max(*depths: int | None) -> int | None:
    known = [depth for depth in depths if depth is not None]
    return max(known) if known else None


@dataclass
class _Checker:
    tree: ast.Module
    module: str
    findings: list[Finding] = field(default_factory=list)
    imported: dict[str, _Imported] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    classes: set[str] = field(default_factory=set)
    bound: set[str] = field(default_factory=set)  # every name the module assigns (shadowing a builtin)
    aliases: dict[str, int] = field(default_factory=dict)  # name or dotted target -> its depth below the config
    returns: dict[str, int] = field(default_factory=dict)  # local function -> the depth of what it returns
    skip: set[int] = field(default_factory=set)  # ids of nodes not to check (annotations, decorators)
    in_test: set[int] = field(default_factory=set)  # ids of BoolOp/Not nodes that combine a branch test

    def report(self, node: ast.AST, rule: str, message: str) -> None:
        self.findings.append(Finding(getattr(node, "lineno", 0), getattr(node, "col_offset", 0), rule, message))

    # -- the passes ------------------------------------------------------------------------------------------
    def run(self) -> None:
        self._collect()
        self._track_config()
        for node in ast.walk(self.tree):
            if id(node) not in self.skip:
                self._check(node)

    def _collect(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._import(node)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions[node.name] = node
                self._skip_annotations(node)
            elif isinstance(node, ast.ClassDef):
                self.classes.add(node.name)
                self._skip_literals(node.decorator_list)
            elif isinstance(node, ast.AnnAssign):
                self._skip_all([node.annotation])
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.bound.add(node.id)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)

    def _skip_annotations(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = node.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
        self._skip_all([arg.annotation for arg in every if arg.annotation is not None])
        self._skip_all([node.returns] if node.returns is not None else [])
        self._skip_literals(node.decorator_list)

    def _skip_all(self, nodes: Sequence[ast.AST]) -> None:
        for root in nodes:
            self.skip.update(id(node) for node in ast.walk(root))

    def _skip_literals(self, nodes: Sequence[ast.AST]) -> None:
        """A decorator's literals (``@dataclass(frozen=True)``) choose nothing from config; the rest is checked."""
        for root in nodes:
            self.skip.update(id(node) for node in ast.walk(root) if isinstance(node, ast.Constant))

    # -- rule 1: imports ---------------------------------------------------------------------------------------
    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                if alias.name in OTHER_MODULES:
                    self.imported[local] = _Imported("module", alias.name)
                else:
                    self.imported[local] = _Imported("forbidden", alias.name)
                    why = "a module of ours" if alias.name.startswith("components") else "a library that computes"
                    self.report(node, "decider-import", f"imports {alias.name} ({why}): decide in the plan")
            return
        module = self._absolute(node)
        for alias in node.names:
            local = alias.asname or alias.name
            full = f"{module}.{alias.name}"
            kind, why = self._classify(module, alias.name)
            self.imported[local] = _Imported(kind, full)
            if kind == "forbidden":
                self.report(node, "decider-import", f"imports {full} ({why}): decide in the plan, pass the result")

    def _absolute(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        package = self.module.split(".")[: -node.level]
        return ".".join([*package, *([node.module] if node.module else [])])

    def _classify(self, module: str, name: str) -> tuple[str, str]:
        if name == "*":
            return "forbidden", "every name of a module"
        if module in OTHER_IMPORTS:
            names = OTHER_IMPORTS[module]
            return ("typing", "") if names is None or name in names else ("forbidden", "not a wiring name")
        if module != "components" and not module.startswith("components."):
            return "forbidden", "a library that computes"
        try:
            value = getattr(importlib.import_module(module), name)
        except AttributeError:
            try:
                value = importlib.import_module(f"{module}.{name}")
            except Exception as error:  # a module that fails to import: nothing to vouch for
                return "forbidden", f"cannot be resolved: {error}"
        except Exception as error:
            return "forbidden", f"cannot be resolved: {error}"
        if inspect.ismodule(value):
            return (
                ("module", "") if value.__name__ in WIRING_MODULES else ("forbidden", "a module: its functions decide")
            )
        if inspect.isclass(value):
            return "class", ""
        if (module, name) in WIRING_HELPERS:
            return "helper", ""
        if callable(value):
            return "forbidden", "a function: it decides from its inputs"
        return "forbidden", "a value: a name or setting the plan gives"

    # -- rule 6's aliases: what holds the stack config, and how deep below it ----------------------------------
    def _track_config(self) -> None:
        for _ in range(20):  # a fixpoint: an alias found may make another
            before = (dict(self.aliases), dict(self.returns))
            for node in ast.walk(self.tree):
                self._bind_from(node)
            if (self.aliases, self.returns) == before:
                return

    def _bind_from(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(target, node.value)
        elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
            self._bind(node.target, node.value)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            self._bind_depth(node.target, self._element_depth(node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind(node.optional_vars, node.context_expr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            returned = [self.depth(n.value) for n in ast.walk(node) if isinstance(n, ast.Return) and n.value]
            self._note(self.returns, node.name, _max(*returned))
            arguments = node.args
            positional = [*arguments.posonlyargs, *arguments.args]
            for arg, default in zip(reversed(positional), reversed(arguments.defaults), strict=False):
                self._note(self.aliases, arg.arg, self.depth(default))
            for arg, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
                if kw_default is not None:
                    self._note(self.aliases, arg.arg, self.depth(kw_default))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.functions:
            function = self.functions[node.func.id].args
            params = [arg.arg for arg in (*function.posonlyargs, *function.args)]
            for param, value in zip(params, node.args, strict=False):
                self._note(self.aliases, param, self.depth(value))
            for keyword in node.keywords:
                if keyword.arg is not None:
                    self._note(self.aliases, keyword.arg, self.depth(keyword.value))

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List):
            for item, item_value in zip(target.elts, value.elts, strict=False):
                self._bind(item, item_value)
        elif isinstance(target, ast.Tuple | ast.List):
            self._bind_depth(target, self._element_depth(value))
        else:
            self._bind_depth(target, self.depth(value))

    def _bind_depth(self, target: ast.expr, depth: int | None) -> None:
        if depth is None:
            return
        if isinstance(target, ast.Tuple | ast.List):
            for item in target.elts:
                self._bind_depth(item, depth)
        elif isinstance(target, ast.Starred):
            self._bind_depth(target.value, depth)
        else:
            key = _dotted(target)
            if key is not None:
                self._note(self.aliases, key, depth)

    @staticmethod
    def _note(book: dict[str, int], key: str, depth: int | None) -> None:
        if depth is not None and depth > book.get(key, -(10**6)):  # the deepest binding: flag more, never less
            book[key] = depth

    def depth(self, node: ast.expr) -> int | None:
        """How many levels below the stack config ``node`` is (0: the config; None: not the config)."""
        if isinstance(node, ast.Name | ast.Attribute):
            key = _dotted(node)
            if key is not None and key in self.aliases:
                return self.aliases[key]
        if isinstance(node, ast.Attribute):
            inner = self.depth(node.value)
            if inner is not None:
                return inner + 1
            return 0 if node.attr == "config" else None
        if isinstance(node, ast.Subscript):
            inner = self.depth(node.value)
            return inner + 1 if inner is not None else None
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in MAPPING_READS:
                inner = self.depth(func.value)
                return None if inner is None else inner + (1 if func.attr == "get" else 0)
            if isinstance(func, ast.Name) and func.id in self.returns:
                return self.returns[func.id]
            return None
        if isinstance(node, ast.NamedExpr):
            return self.depth(node.value)
        if isinstance(node, ast.IfExp):
            return _max(self.depth(node.body), self.depth(node.orelse))
        if isinstance(node, ast.BoolOp):
            return _max(*(self.depth(value) for value in node.values))
        if isinstance(node, ast.Starred):
            return self.depth(node.value)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            inner = _max(*(self.depth(item) for item in node.elts))
            return inner - 1 if inner is not None else None
        if isinstance(node, ast.Dict):
            inner = _max(*(self.depth(value) for value in node.values))
            return inner - 1 if inner is not None else None
        return None

    def _element_depth(self, iterable: ast.expr) -> int | None:
        depth = self.depth(iterable)
        return depth + 1 if depth is not None else None

    # -- rules 2 to 6, node by node -------------------------------------------------------------------------
    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            self._call(node)
        elif isinstance(node, ast.If | ast.IfExp | ast.Assert):
            self._test(node.test)
        elif isinstance(node, ast.While):
            self.report(node, "value-branch", "a while loop branches on a value: the plan gives what to build")
            self._test(node.test)
        elif isinstance(node, ast.Match):
            self.report(node, "value-branch", "a match branches on a value: the plan gives what to build")
        elif isinstance(node, ast.Try | ast.TryStar):
            self.report(node, "value-branch", "a try branches on an exception: the plan gives what to build")
        elif isinstance(node, ast.Raise):
            self.report(node, "value-branch", "raises: refusing a config is the plan's (StackConfigError)")
        elif isinstance(node, ast.Compare) and not _is_none_check(node):
            self.report(node, "value-branch", f"compares values ({ast.unparse(node)}): decide in the plan")
        elif isinstance(node, ast.comprehension):
            self._comprehension(node)
        elif isinstance(node, ast.SetComp | ast.Set):
            self.report(node, "inline-filter", "builds a set (it deduplicates): the plan gives the collection")
        elif isinstance(node, ast.Subscript):
            self._subscript(node)
        elif isinstance(node, ast.For | ast.AsyncFor):
            self._iteration(node, node.iter)
        elif isinstance(node, ast.Starred) and isinstance(node.ctx, ast.Load):
            self._iteration(node, node.value)
        elif isinstance(node, ast.keyword) and node.arg is None:  # f(**value)
            self._iteration(node.value, node.value)
        elif isinstance(node, ast.Dict):  # {**value}
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    self._iteration(value, value)
        else:
            self._computation(node)
        if isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
            self._config_read(node)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if func.attr in STR_METHODS or isinstance(receiver, ast.Constant | ast.JoinedStr):
                self.report(node, "inline-computation", f"formats or computes a string (.{func.attr}): the plan does")
            elif func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant):
                self.report(
                    node, "inline-filter", f"picks by a constant ({ast.unparse(node)}): the plan gives the value"
                )
            elif not self._allowed_attribute_call(func):
                self.report(
                    node, "attribute-call", f"calls {ast.unparse(func)}(...) through an attribute: decide in the plan"
                )
        elif isinstance(func, ast.Name):
            name = func.id
            if name in self.imported or name in self.functions or name in self.classes:
                return  # an import that decides is reported where it is imported; own functions are checked
            if name in self.bound or not hasattr(builtins, name):
                self.report(
                    node, "attribute-call", f"calls {name}(...), a value: call components and wiring helpers only"
                )
            elif name in DOOR_BUILTINS:
                self.report(node, "attribute-call", f"calls {name}(...): reaches a function or value by another door")
            elif _is_exception(name):
                return  # the raise reports it
            elif name not in WIRING_BUILTINS:
                self.report(node, "inline-filter", f"calls the builtin {name}(...), which computes: the plan does")
        else:
            self.report(node, "attribute-call", f"calls {ast.unparse(func)}: call components and wiring helpers only")

    def _allowed_attribute_call(self, func: ast.Attribute) -> bool:
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id in self.imported:  # a module's or a class's function
            imported = self.imported[receiver.id]
            return imported.kind == "module" and (imported.full_name, func.attr) in WIRING_MODULE_CALLS
        if isinstance(receiver, ast.Attribute) and receiver.attr == "platform" and func.attr in PLATFORM_SEAM:
            return True
        return func.attr in MAPPING_READS

    def _test(self, test: ast.expr) -> None:
        """A branch test: the truthiness of a name or attribute, ``is (not) None``, and not/and/or of those."""
        if not self._wiring_test(test):
            self.report(test, "value-branch", f"branches on a computed test ({ast.unparse(test)}): decide in the plan")
        for node in ast.walk(test):
            if isinstance(node, ast.expr) and self.depth(node) is not None:
                self.report(
                    test, "config-read", f"branches on the stack config ({ast.unparse(test)}): the plan decides"
                )
                break

    def _wiring_test(self, test: ast.expr) -> bool:
        if isinstance(test, ast.Name | ast.Attribute):
            return True
        if isinstance(test, ast.Compare):
            return _is_none_check(test) and isinstance(test.left, ast.Name | ast.Attribute)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            self.in_test.add(id(test))
            return self._wiring_test(test.operand)
        if isinstance(test, ast.BoolOp):
            self.in_test.add(id(test))
            return all([self._wiring_test(value) for value in test.values])
        return False

    def _comprehension(self, node: ast.comprehension) -> None:
        if node.ifs:
            self.report(node.ifs[0], "inline-filter", "filters in a comprehension: the plan gives the collection")
        self._iteration(node.ifs[0] if node.ifs else node.target, node.iter)

    def _iteration(self, where: ast.AST, iterable: ast.expr) -> None:
        depth = self._element_depth(iterable)
        if depth is not None and depth >= 2:
            self.report(
                where, "config-read", f"iterates over the stack config ({ast.unparse(iterable)}): the plan does"
            )

    def _subscript(self, node: ast.Subscript) -> None:
        index = node.slice
        # A constant index (``[0]``, ``[-1]``, ``["a100"]``) is reported here, not as a literal chosen inline.
        constant = isinstance(index, ast.UnaryOp) and isinstance(index.operand, ast.Constant)
        self.skip.update(id(n) for n in ast.walk(index) if isinstance(n, ast.Constant))
        self.skip.update([id(index)] if constant else [])
        if isinstance(index, ast.Slice):
            self.report(node, "inline-filter", f"slices ({ast.unparse(node)}): the plan gives the collection")
        elif isinstance(index, ast.Constant) or constant:
            self.report(node, "inline-filter", f"picks by a constant ({ast.unparse(node)}): the plan gives the value")
        elif isinstance(node.value, ast.Dict | ast.List | ast.Tuple):
            self.report(node, "value-branch", f"a branch table ({ast.unparse(node)}): decide in the plan")

    def _computation(self, node: ast.AST) -> None:
        test_not = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and id(node) in self.in_test
        if isinstance(node, ast.BinOp | ast.AugAssign) or (isinstance(node, ast.UnaryOp) and not test_not):
            self.report(node, "inline-computation", f"computes {ast.unparse(node)}: the plan gives the value")
        elif isinstance(node, ast.BoolOp) and id(node) not in self.in_test:
            self.report(node, "inline-computation", f"computes {ast.unparse(node)} (outside a branch test)")
        elif isinstance(node, ast.JoinedStr):
            self.report(node, "inline-computation", "formats a string (an f-string): the plan gives names")
        elif isinstance(node, ast.Lambda):
            self.report(node, "inline-computation", "a lambda computes: the plan gives the value")
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float, complex, bool):
            self.report(node, "inline-computation", f"chooses the literal {node.value!r}: the plan gives settings")

    def _config_read(self, node: ast.Attribute | ast.Subscript | ast.Call) -> None:
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
            return
        depth = self.depth(node)
        if depth is None or depth < 2:
            return
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Attribute):
                return
            inner = node.func.value
        else:
            inner = node.value
        inner_depth = self.depth(inner)
        if inner_depth is not None and inner_depth >= 2:
            return  # the deeper read reports it
        self.report(
            node, "config-read", f"reads the setting {ast.unparse(node)} out of the stack config: the plan does"
        )


def _lines(paths: Sequence[Path]) -> Iterator[str]:
    for path in paths:
        for finding in check_file(path):
            yield finding.format(str(path))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.wiring_guard", description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path, default=[PROGRAM])
    args = parser.parse_args(argv)
    try:
        lines = list(_lines(args.files))
    except (OSError, SyntaxError) as error:
        print(f"wiring guard: {error}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    if lines:
        print(
            f"wiring guard: {len(lines)} finding(s); the program must only wire (tools/wiring_guard.py)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
