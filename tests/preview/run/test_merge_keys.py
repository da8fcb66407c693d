"""YAML merge keys in a stack file (``<<: *anchor``): resolved as YAML and the Pulumi CLI (gopkg.in/yaml.v3) resolve
them, the mapping's own keys winning; everything the strict reader refuses stays refused through a merge."""

from __future__ import annotations

import pytest

from components.base import strict_yaml


def test_a_merge_key_lays_the_anchor_under_the_mapping_and_its_own_keys_win() -> None:
    text = "a: &shared\n  zone: z1\n  taints: [t]\nb:\n  <<: *shared\n  zone: z2\nc:\n  <<: [*shared, {extra: 1}]\n"
    assert strict_yaml.load(text) == {
        "a": {"zone": "z1", "taints": ["t"]},
        "b": {"zone": "z2", "taints": ["t"]},
        "c": {"zone": "z1", "taints": ["t"], "extra": 1},
    }


def test_lines_name_the_keys_as_written_not_the_merged_ones() -> None:
    _, lines = strict_yaml.load_with_lines("a: &shared\n  zone: z1\nb:\n  <<: *shared\n  zone: z2\n")
    assert lines[("b", "zone")] == 5


@pytest.mark.parametrize(
    ("text", "why", "line"),
    [
        ("a:\n  <<: 3\n", "expected a mapping or list of mappings for merging", 2),
        ("a: &s {x: 1}\nb:\n  <<: *s\n  y: 1\n  y: 2\n", "duplicate key 'y'", 5),
        ("a: &s {1: x}\nb:\n  <<: *s\n", "a mapping key must be a string", 1),
        ("a: &s {d: 2024-01-01}\nb:\n  <<: *s\n", "a YAML date or timestamp is not a config value", 1),
    ],
)
def test_what_the_reader_refuses_it_refuses_through_a_merge_too(text: str, why: str, line: int) -> None:
    with pytest.raises(strict_yaml.StrictYamlError) as refused:
        strict_yaml.load(text)
    assert why in refused.value.message
    assert refused.value.line == line


def test_an_alias_bomb_through_merge_keys_is_refused() -> None:
    levels = ["a0: &a0 {x: 1}"]
    for level in range(1, 8):
        merges = ", ".join([f"*a{level - 1}"] * 9)
        levels.append(f"a{level}: &a{level}\n  k{level}: [{merges}]")
    levels.append("b:\n  <<: *a7")
    with pytest.raises(strict_yaml.StrictYamlError, match="expands to more than"):
        strict_yaml.load("\n".join(levels) + "\n")
