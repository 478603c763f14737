"""Reading YAML defensively: regular files of bounded size, the C parser, no duplicate keys, bounded expansion.

PyYAML's plain ``safe_load`` follows YAML 1.1, which reads ``12:00`` as the base-60 number 720 and keeps
the last of two equal keys. Here a number written in such a form is still a number (so messages can say
what YAML made of it) but is marked as a :class:`YamlInt` / :class:`YamlFloat`, which config models
refuse; a repeated key is an error naming both lines. After loading, a bounded walk refuses data that
aliases expand past :data:`MAX_VALUES` values (an "alias bomb") or that nests deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from accelsim.errors import ConfigError
from accelsim.fileio import note_read

MAX_BYTES = 16 * 1024 * 1024  # largest config file read
MAX_VALUES = 1_000_000  # values (counting repeats through aliases) a loaded file may hold
MAX_EVENTS = 1_000_000  # YAML parse events (keys, values, collection starts and ends) a file may have
MAX_DEPTH = 100  # nesting levels of mappings / lists
MAX_NUMBER_CHARS = 40  # longest integer literal (2^64 has 20 digits)

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*|0x[0-9a-fA-F]+)\Z")
_PLAIN_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z|[-+]?\.(?:inf|Inf|INF)\Z"
                          r"|\.(?:nan|NaN|NAN)\Z")


class YamlInt(int):
    """An integer YAML 1.1 read from a form other than plain decimal or hex: base 60 (``12:00``),
    a leading-zero octal (``010``), binary (``0b11``) or digits with underscores (``1_000``)."""

    text: str

    def __new__(cls, value: int, text: str) -> YamlInt:
        obj = super().__new__(cls, value)
        obj.text = text
        return obj


class YamlFloat(float):
    """A float YAML 1.1 read from base 60 (``1:30.0``) or with underscores."""

    text: str

    def __new__(cls, value: float, text: str) -> YamlFloat:
        obj = super().__new__(cls, value)
        obj.text = text
        return obj


def quirk(value: Any) -> str | None:
    """If ``value`` came from a surprising YAML 1.1 number form, say what YAML made of it; else None."""
    if isinstance(value, YamlInt | YamlFloat):
        number = int(value) if isinstance(value, YamlInt) else float(value)
        return (f"YAML 1.1 reads {value.text} as the number {number} (base 60, octal, binary or with '_'); "
                "write a plain decimal number, or quote it if it is text")
    return None


class Refused(yaml.YAMLError):
    """A loader-level refusal with its line (1-based) and the key it concerns."""

    def __init__(self, line: int | None, key: str | None, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.key = key
        self.problem = problem


class StrictLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """Safe loader (libyaml when available) that refuses duplicate keys and marks YAML 1.1 number forms."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for i, (key_node, _) in enumerate(node.value):
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = self.construct_object(key_node)
                try:
                    first = seen.setdefault(key, i)
                except TypeError:  # unhashable: the base constructor reports it
                    continue
                if first != i:
                    line, before = key_node.start_mark.line + 1, node.value[first][0].start_mark.line + 1
                    raise Refused(line, str(key), f"duplicate key (first on line {before}, again on line "
                                   f"{line}); YAML would silently keep only the last")
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> int:
        text = str(node.value)
        if len(text) > MAX_NUMBER_CHARS:
            raise Refused(node.start_mark.line + 1, None,
                           f"integer {text[:20]}... has {len(text)} characters (at most {MAX_NUMBER_CHARS})")
        value = super().construct_yaml_int(node)
        return value if _PLAIN_INT.match(text) else YamlInt(value, text)

    def construct_yaml_float(self, node: Any) -> float:
        text = str(node.value)
        value = super().construct_yaml_float(node)
        return value if _PLAIN_FLOAT.match(text) else YamlFloat(value, text)


StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)
StrictLoader.add_constructor("tag:yaml.org,2002:float", StrictLoader.construct_yaml_float)


def read_bytes(path: str | Path, src: str) -> bytes:
    """Bytes of a regular file of at most MAX_BYTES, or a ConfigError (never blocks on a FIFO or a device)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(src, None, "file not found") from None
    except OSError as exc:
        raise ConfigError(src, None, f"cannot read: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(src, None, "is a directory, expected a YAML file")
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(src, None, "is not a regular file (a device, pipe or socket); expected a YAML file")
    if st.st_size > MAX_BYTES:
        raise ConfigError(src, None, f"file is {st.st_size:,} bytes; config files are limited to {MAX_BYTES:,} "
                                     f"bytes ({MAX_BYTES // 2**20} MiB)")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # replaced since the stat above
                raise ConfigError(src, None, "is not a regular file; expected a YAML file")
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(src, None, f"cannot read: {exc.strerror}") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(src, None, f"file is larger than {MAX_BYTES:,} bytes ({MAX_BYTES // 2**20} MiB), "
                                     "the limit for config files")
    note_read(path)  # an output of this command may not replace it (an extends parent, a variant's workload)
    return raw


_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _prescan(text: str | bytes) -> None:
    """Stream the parse events (constant memory) and refuse too many of them, or nesting past MAX_DEPTH,
    before any node is built: building nodes costs far more time and memory than parsing."""
    depth = 0
    for count, event in enumerate(yaml.parse(text, Loader=StrictLoader), 1):
        kind = type(event)
        if kind in _OPEN:
            depth += 1
            if depth > MAX_DEPTH:
                raise Refused(event.start_mark.line + 1, None, f"nested more than {MAX_DEPTH} levels deep; refused")
        elif kind in _CLOSE:
            depth -= 1
        if count > MAX_EVENTS:
            raise Refused(event.start_mark.line + 1, None, f"more than {MAX_EVENTS:,} YAML items (keys, values, "
                                                           "lists, mappings); refused")


def load(text: str | bytes) -> Any:
    """Parse YAML text with :class:`StrictLoader`; raises ``yaml.YAMLError`` (a refusal is one too)."""
    _prescan(text)
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a safe loader


def parse(text: str | bytes, src: str) -> Any:
    """Parse a YAML file's text and check its extent; YAML problems become a ConfigError naming the line."""
    try:
        data = load(text)
    except Refused as exc:
        if exc.key is not None:
            raise ConfigError(src, exc.key, exc.problem) from None
        raise ConfigError(src, None, f"line {exc.line}: {exc.problem}" if exc.line else exc.problem) from None
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        line = f"line {mark.line + 1}: " if mark else ""
        problem = exc.problem or ""
        if "could not determine a constructor for the tag" in problem:
            tag = problem.replace("could not determine a constructor for the tag", "").strip()
            problem = (f"YAML tag {tag} is not allowed (configs are plain data; object-constructing tags "
                       "are refused)")
        else:
            problem = f"malformed YAML: {problem}"
        raise ConfigError(src, None, line + problem) from None
    except yaml.reader.ReaderError as exc:
        if "utf" in str(exc.reason).lower():
            problem = f"not a UTF-8 text file (invalid byte at position {exc.position})"
        else:
            problem = f"position {exc.position}: character #x{exc.character:04x} is not allowed in YAML"
        raise ConfigError(src, None, problem) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(src, None, f"{line}malformed YAML: {problem}") from None
    except UnicodeDecodeError:
        raise ConfigError(src, None, "not a UTF-8 text file") from None
    except RecursionError:
        raise ConfigError(src, None, f"nested too deeply (at most {MAX_DEPTH} levels)") from None
    check_extent(data, src)
    return data


def check_extent(data: Any, src: str) -> None:
    """Refuse data holding more than MAX_VALUES values (aliases counted each time) or nesting past MAX_DEPTH."""
    count = 1
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > MAX_DEPTH:
            raise ConfigError(src, None, f"nested more than {MAX_DEPTH} levels deep (or a value contains itself "
                                         "through an alias); refused")
        count += len(children)
        if count > MAX_VALUES:
            raise ConfigError(src, None, f"holds more than {MAX_VALUES:,} values once YAML aliases are expanded "
                                         "(an alias bomb?); refused")
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
