"""The one reader of the YAML files users write: `--config` files, job specs and experiment files.

YAML's aliases (`*name`, a repeat of the value anchored `&name`) make a file stand for far more than it
holds: nine lines of "billion laughs" are 10^9 values, which PyYAML builds at once as shared lists but
every later step (checking the settings, printing one, writing `config.yaml`) walks value by value, for
minutes and gigabytes. An alias inside its own value makes a value that contains itself, which a walk
never finishes. `load_yaml` reads the document's nodes first and refuses both before any value is built:
aliases may stand for at most `MAX_ALIAS_NODES` values in all, counted as if written out. Anchors and
aliases within that bound (a judge's settings used twice, say) read as before.

>>> load_yaml("judge: &j {model: x}\\npipeline: *j", "config.yaml")
{'judge': {'model': 'x'}, 'pipeline': {'model': 'x'}}
>>> load_yaml("a: &a [*a]", "config.yaml")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ascend_eval.base.errors.ConfigError: config.yaml: the value anchored at line 1, column 4 holds an alias...
"""

from __future__ import annotations

from typing import Any

from ascend_eval.errors import ConfigError

__all__ = ["MAX_ALIAS_NODES", "load_yaml"]

MAX_ALIAS_NODES = 100_000
"""The most values a YAML file's aliases may stand for in all, each alias counted as the values (scalars,
lists and mappings, nested ones included) it repeats. A config or spec reuses a few settings blocks; a
file over this is an alias bomb."""


def load_yaml(text: str, where: str) -> Any:
    """The value of the YAML document `text` (None for an empty one), read with PyYAML's safe loader.

    Args:
        text: the document.
        where: what messages call it, e.g. "--config 'run.yaml'" or "Job spec 'job.yaml'".

    Raises:
        ConfigError: naming `where`: not valid YAML, aliases that stand for more than `MAX_ALIAS_NODES`
            values or for a value inside themselves, or nesting deeper than Python can read.
    """
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_aliases(node, where)
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        raise ConfigError(f"{where} is not valid YAML: {e}") from None
    except RecursionError:
        raise ConfigError(
            f"{where} nests lists or mappings too deeply to be read; flatten it (a few levels suffice)."
        ) from None
    finally:
        loader.dispose()


def _check_aliases(root: Any, where: str) -> None:
    """Refuse a node graph whose aliases repeat more than `MAX_ALIAS_NODES` values or form a cycle.

    An alias is the same node object met again, so the graph is walked once, each node's expanded size
    computed from its children's (depth first, without recursion: the nesting may be deep)."""
    sizes: dict[int, int] = {}
    """id(node) -> values in it, aliases written out (for the nodes done)."""
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            continue
        if key in sizes:
            continue
        if key in on_path:
            mark = node.start_mark
            raise ConfigError(
                f"{where}: the value anchored at line {mark.line + 1}, column {mark.column + 1} holds an "
                "alias of itself (*name inside &name), a value without end. Write it out instead."
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children) if id(child) not in sizes)
    repeated = sizes[id(root)] - len(sizes)
    if repeated > MAX_ALIAS_NODES:
        raise ConfigError(
            f"{where}: its aliases (*name) stand for {repeated:,} values when written out, more than the "
            f"{MAX_ALIAS_NODES:,} a settings file may repeat (an alias bomb?). Write the values out, or "
            "repeat fewer."
        )


def _children(node: Any) -> list[Any]:
    """The nodes directly inside `node`: a sequence's items, a mapping's keys and values."""
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
