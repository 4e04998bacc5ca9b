"""Safe YAML loading that keeps positions, for law files.

PyYAML's C composer builds the node tree (about 15x faster than a ruamel.yaml round-trip);
lawkit constructs plain Python data from it itself, so that it can refuse what a law file never
needs and what an attacker would use: tags that build objects, aliases (the "billion laughs"
bomb), duplicate keys, non-scalar keys. Every node's position is kept by its key path, so that
errors and text edits can name the line.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from lawkit.errors import LawFileError

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_PLAIN_RESOLVERS = {first: tuple(resolvers) for first, resolvers
                    in yaml.resolver.Resolver.yaml_implicit_resolvers.items()}


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader (libyaml's C parser where PyYAML has it), with the resolver's work
    per node cut to what a safe load without path resolvers does: the composer calls these
    three methods for every node, and PyYAML's versions cost a fifth of composing a law file.
    Tags come out exactly as PyYAML's: the same implicit resolvers, tried in the same order.
    """

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            if implicit[0]:
                for tag, pattern in _PLAIN_RESOLVERS.get(value[:1], ()):
                    if pattern.match(value):
                        return str(tag)
            return _STR
        return _SEQ if kind is yaml.SequenceNode else _MAP

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        """No path resolvers: nothing to track."""

    def ascend_resolver(self) -> None:
        """No path resolvers: nothing to track."""

Path_ = tuple[str | int, ...]

_STANDARD_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}
_MAX_DEPTH = 64
MAX_NODES = 100_000
"""The most YAML nodes (scalars, lists, mappings) a law file may hold: some 1,900 laws of about
50 nodes. Time and memory grow with the nodes, not the bytes: `[0,0,...]` packs a node into
two bytes, so a text long enough to exceed this is counted first."""


class NodeIndex(Mapping[Path_, yaml.Node]):
    """The node at every key path, found by walking the tree on demand (building the whole
    index for every file cost `lawkit check` a third of its time; most lookups are a few)."""

    def __init__(self, root: yaml.Node) -> None:
        self._root = root

    def __getitem__(self, path: Path_) -> yaml.Node:
        node: yaml.Node | None = self._root
        for part in path:
            if isinstance(node, yaml.MappingNode) and isinstance(part, str):
                node = next((v for k, v in node.value if k.value == part), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and \
                    0 <= part < len(node.value):
                node = node.value[part]
            else:
                node = None
            if node is None:
                raise KeyError(path)
        assert node is not None
        return node

    def __iter__(self) -> Iterator[Path_]:
        stack: list[tuple[Path_, yaml.Node]] = [((), self._root)]
        while stack:
            path, node = stack.pop()
            yield path
            if isinstance(node, yaml.MappingNode):
                stack.extend(((*path, k.value), v) for k, v in reversed(node.value))
            elif isinstance(node, yaml.SequenceNode):
                stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(node.value))))

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass(frozen=True)
class Document:
    """A parsed YAML document: its data, and the node of every key path."""

    data: Any
    nodes: NodeIndex

    def line(self, path: Path_) -> int | None:
        """The 1-based line of the node at `path`, or of its nearest ancestor that has one."""
        for cut in range(len(path), -1, -1):
            node = self.nodes.get(path[:cut])
            if node is not None:
                return int(node.start_mark.line) + 1
        return None


def decode(raw: bytes, path: str) -> str:
    """UTF-8 text of a law file (a leading BOM dropped), or a LawFileError naming the byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise LawFileError(f"not UTF-8 (byte {exc.start}): save the file as UTF-8",
                           path=path, line=line) from None
    return text[1:] if text.startswith("\ufeff") else text


def load(text: str, path: str) -> Document:
    """Parse one YAML document safely; a LawFileError (with the line) for anything else."""
    root = _compose(text, path)
    data = _Builder(path).build(root, 0)
    return Document(data=data, nodes=NodeIndex(root))


def load_nodes(text: str, path: str) -> Document:
    """The node tree of a text `load` has already accepted, without building its data (for a
    file whose facts `check` cached); the document's `data` is None."""
    return Document(data=None, nodes=NodeIndex(_compose(text, path)))


def _compose(text: str, path: str) -> yaml.Node:
    try:
        if len(text) > MAX_NODES:
            _count_nodes(text, path)
        root = yaml.compose(text, Loader=Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise LawFileError(f"not valid YAML: {problem}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise LawFileError(f"not valid YAML: {exc}".splitlines()[0], path=path) from None
    except RecursionError:
        raise LawFileError("not valid YAML: nesting too deep", path=path) from None
    if root is None:
        raise LawFileError("the file is empty: a law file starts with 'schema: lawkit/1'",
                           path=path)
    return root


_NODE_EVENTS = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent,
                yaml.AliasEvent)


def _count_nodes(text: str, path: str) -> None:
    """Refuse a text of more than MAX_NODES nodes, from the parser's events (a fifth of the
    time of composing them), stopping at the first one over."""
    count = 0
    for event in yaml.parse(text, Loader=Loader):
        if isinstance(event, _NODE_EVENTS):
            count += 1
            if count > MAX_NODES:
                raise LawFileError(f"more than {MAX_NODES:,} YAML values: law files are small; "
                                   "split the laws over several files", path=path,
                                   line=event.start_mark.line + 1 if event.start_mark else None)


class _Builder:
    def __init__(self, path: str) -> None:
        self.path = path
        self.seen: set[int] = set()
        self.scalars = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.Node, message: str) -> LawFileError:
        return LawFileError(message, path=self.path, line=node.start_mark.line + 1)

    def build(self, node: yaml.Node, depth: int) -> Any:
        if id(node) in self.seen:
            raise self.fail(node, "aliases (*name) are not allowed in law files: write the value "
                                  "out")
        self.seen.add(id(node))
        if depth > _MAX_DEPTH:
            raise self.fail(node, f"nesting deeper than {_MAX_DEPTH} levels")
        if node.tag not in _STANDARD_TAGS:
            raise self.fail(node, f"tag {node.tag} is not allowed in law files: remove it")
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == \
                        "tag:yaml.org,2002:null":
                    raise self.fail(key_node, "a mapping key must be a plain value")
                key = key_node.value
                if key in out:
                    raise self.fail(key_node, f"duplicate key {key!r}: keep one")
                out[key] = self.build(value_node, depth + 1)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, depth + 1) for item in node.value]
        if isinstance(node, yaml.ScalarNode):
            # An explicit tag on an odd value (`!!int ""`, `!!float ""`, 5,000 digits) fails
            # in int(), float() or PyYAML's constructor: ValueError, and IndexError for "".
            try:
                fast = _fast_scalar(node)
                if fast is not _SLOW:
                    return fast
                value = self.scalars.construct_object(node, deep=True)
            except (yaml.constructor.ConstructorError, ValueError, OverflowError, IndexError):
                shown = node.value if len(node.value) <= 60 else f"{node.value[:57]}..."
                raise self.fail(node, f"cannot read the value {shown!r}") from None
            if isinstance(value, datetime.date):
                return value.isoformat()
            return value
        raise self.fail(node, "unexpected YAML node")


_SLOW = object()


def _fast_scalar(node: yaml.ScalarNode) -> Any:
    """The value of a str, int or float scalar where Python reads it as YAML 1.1 does, else _SLOW.

    Python's int() and float() agree with YAML 1.1 on decimal digits, signs, '.', exponents and
    '_'; they differ on leading zeros (octal to YAML 1.1), 0x/0o/0b, ':' (base 60) and .inf/.nan,
    which go to PyYAML's constructor.
    """
    tag, value = node.tag, node.value
    if tag == _STR:
        return value
    if tag == _INT:
        digits = value.lstrip("+-")
        if digits[:1] != "0" and ":" not in digits:
            return int(value)
    elif tag == _FLOAT and ":" not in value and "." in value and "inf" not in value.lower() \
            and "nan" not in value.lower():
        return float(value)
    return _SLOW


def is_quoted(node: yaml.Node) -> bool:
    """Whether a scalar node was written in quotes (single or double)."""
    return isinstance(node, yaml.ScalarNode) and node.style in ("'", '"')
