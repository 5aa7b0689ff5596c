"""Synthetic prompts of exact token lengths, reproducible from a seed (no dataset download).

Random words are tokenised, cut to the wanted number of tokens, decoded and re-tokenised, until a
text is found whose token count is exact. The tokenizer is the model's own: a local Hugging Face
tokenizer (`--tokenizer`), or the server's `/tokenize` and `/detokenize` endpoints (vLLM's).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

import requests

from fleetplan.core.errors import FleetplanError

# Plain, common words: stable under most tokenizers, no special tokens.
_WORD_TEXT = (
    "time year people way day man thing woman life child world school state family student group "
    "country problem hand part place case week company system program question work government "
    "number night point home water room mother area money story fact month lot right study book "
    "eye job word business issue side kind head house service friend father power hour game line "
    "end member law car city community name president team minute idea kid body information back "
    "parent face others level office door health person art war history party result change "
    "morning reason research girl guy moment air teacher force education foot boy age policy "
    "process music market sense nation plan college interest death experience effect use class "
    "control care field development role effort rate heart drug show leader light voice wife "
    "police mind price report decision son view relationship town road arm difference value "
    "building action model season society tax director position player record paper space ground "
    "form event official matter center couple site project activity star table need court oil "
    "situation cost industry figure street image phone data picture practice piece land product "
    "doctor wall patient worker news test movie north love support technology step baby computer "
    "type attention film tree source organization hair window evidence population site quality"
)
_WORDS = tuple(_WORD_TEXT.split())


class Tokenizer(Protocol):
    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class PromptError(FleetplanError):
    """No prompt of the wanted token length could be made."""


class LocalTokenizer:
    """A Hugging Face tokenizer from a path or name (no hub access needed for a local path)."""

    def __init__(self, name_or_path: str):
        from transformers import AutoTokenizer  # heavy: imported only when used

        self._tokenizer = AutoTokenizer.from_pretrained(name_or_path)

    def encode(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False)

    def decode(self, ids: Sequence[int]) -> str:
        return self._tokenizer.decode(list(ids))


class ServerTokenizer:
    """The server's own tokenizer, through vLLM's `/tokenize` and `/detokenize` endpoints."""

    def __init__(self, base_url: str, model: str, timeout_s: float = 30.0):
        self.base_url, self.model, self.timeout_s = base_url.rstrip("/"), model, timeout_s

    def _post(self, path: str, payload: dict) -> dict:
        try:
            response = requests.post(f"{self.base_url}{path}", json=payload, timeout=self.timeout_s)
        except requests.RequestException as error:
            raise PromptError(f"cannot reach {self.base_url}{path}: {error}") from None
        if response.status_code != 200:
            raise PromptError(
                f"{self.base_url}{path} answered HTTP {response.status_code}: the server has no "
                "tokenize endpoint; pass the model's tokenizer with --tokenizer"
            )
        return response.json()

    def encode(self, text: str) -> list[int]:
        return self._post(
            "/tokenize", {"model": self.model, "prompt": text, "add_special_tokens": False}
        )["tokens"]

    def decode(self, ids: Sequence[int]) -> str:
        return self._post("/detokenize", {"model": self.model, "tokens": list(ids)})["prompt"]


def exact_prompt(tokenizer: Tokenizer, length: int, rng: random.Random, attempts: int = 8) -> str:
    """A text of exactly `length` tokens."""
    words = []
    for _ in range(attempts):
        while True:
            words += rng.choices(_WORDS, k=max(16, length))
            ids = tokenizer.encode(" ".join(words))
            if len(ids) >= length + 8:
                break
        for cut in (length, length - 1, length + 1, length - 2, length + 2):
            text = tokenizer.decode(ids[:cut])
            if len(tokenizer.encode(text)) == length:
                return text
        words = []
    raise PromptError(f"could not make a prompt of exactly {length} tokens with this tokenizer")


def make_prompts(tokenizer: Tokenizer, count: int, length: int, seed: int) -> list[tuple[str, int]]:
    """`count` distinct prompts of `length` tokens each (text, token count)."""
    return PromptPool(tokenizer, length, seed).first(count)


class PromptPool:
    """Prompts made as they are needed, for levels whose length is known only when they start
    (a capacity search): `first(n)` is `make_prompts(..., n, ...)` with the same seed."""

    def __init__(self, tokenizer: Tokenizer, length: int, seed: int):
        self.tokenizer, self.length = tokenizer, length
        self._rng = random.Random(f"{seed}:{length}")
        self._made: list[tuple[str, int]] = []

    def first(self, count: int) -> list[tuple[str, int]]:
        while len(self._made) < count:
            self._made.append((exact_prompt(self.tokenizer, self.length, self._rng), self.length))
        return self._made[:count]
