"""preview/code.py on each grammar shipped: the language told from content alone and the definitions it holds."""

from __future__ import annotations

import pytest

from mcp_offload.preview import build_preview
from support.preview import len4

GO = """package server

import (
\t"fmt"
\t"net/http"
)

type Store struct {
\titems map[string]int
}

func NewStore() *Store {
\treturn &Store{items: map[string]int{}}
}

func (s *Store) Get(key string) (int, bool) {
\tv, ok := s.items[key]
\treturn v, ok
}

func main() {
\tfmt.Println(http.StatusOK)
}
"""

RUST = """use std::collections::HashMap;

pub struct Cache {
    items: HashMap<String, u64>,
}

impl Cache {
    pub fn new() -> Self {
        Cache { items: HashMap::new() }
    }

    pub fn get(&self, key: &str) -> Option<&u64> {
        self.items.get(key)
    }
}

pub enum Mode { Fast, Safe }

fn main() {
    let mut c = Cache::new();
    println!("{:?}", c.get("a"));
}
"""

JAVA = """package org.example;

import java.util.List;
import java.util.ArrayList;

public class Inventory {
    private final List<String> items = new ArrayList<>();

    public Inventory() {
    }

    @Override
    public String toString() {
        return items.toString();
    }

    public int size() {
        return items.size();
    }
}
"""

TYPESCRIPT = """import { readFile } from "fs/promises";

export interface Options {
  verbose: boolean;
  retries: number;
}

export type Mode = "fast" | "safe";

export class Loader {
  private cache: Map<string, string> = new Map();

  async load(path: string): Promise<string> {
    return readFile(path, "utf8");
  }
}

export const parse = (text: string): number => text.length;

function helper(x: number): number {
  return x * 2;
}
"""

CASES = [
    ("go", GO, ["type Store", "func NewStore", "method Get", "func main"]),
    ("rust", RUST, ["struct Cache", "impl Cache", "fn new", "fn get", "enum Mode", "fn main"]),
    ("java", JAVA, ["class Inventory", "constructor Inventory", "method toString", "method size"]),
    ("typescript", TYPESCRIPT, ["interface Options", "type Mode", "class Loader", "method load", "const parse"]),
]


@pytest.mark.parametrize(("language", "source", "expected"), CASES, ids=[c[0] for c in CASES])
def test_language_from_content_and_its_definitions(language: str, source: str, expected: list[str]) -> None:
    preview = build_preview(source, "text", budget_tokens=420, count_tokens=len4)
    assert preview.data["type"] == "code" and preview.data["language"] == language, preview.text
    shown = [what for _, _, what, _ in preview.data["definitions"]]
    for want in expected:
        assert want in shown, (want, shown)
    lines = source.split("\n")
    for first, last, what, _ in preview.data["definitions"]:
        name = what.split(" ", 1)[1]
        assert name in lines[first - 1] or name in "\n".join(lines[first - 1 : last]), (what, first)
        assert first <= last <= len(lines)
