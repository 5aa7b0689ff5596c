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

from fleetplan.collectors.preflight import NoAnswer, fetch_json, shown
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
WORDS = tuple(_WORD_TEXT.split())


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

    def _post(self, path: str, payload: dict, key: str) -> object:
        url = f"{self.base_url}{path}"
        try:
            status, answer = fetch_json("POST", url, payload=payload, deadline_s=self.timeout_s)
        except (requests.RequestException, NoAnswer) as error:
            raise PromptError(f"cannot reach {url}: {shown(str(error), 200)}") from None
        if status != 200:
            raise PromptError(
                f"{url} answered HTTP {status}: the server has no tokenize endpoint; pass the "
                "model's tokenizer with --tokenizer"
            )
        if not isinstance(answer, dict) or key not in answer:
            raise PromptError(
                f"{url} answered {shown(answer)}, not an object with `{key}`: pass the model's "
                "tokenizer with --tokenizer"
            )
        return answer[key]

    def encode(self, text: str) -> list[int]:
        payload = {"model": self.model, "prompt": text, "add_special_tokens": False}
        ids = self._post("/tokenize", payload, "tokens")
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids
        ):
            raise PromptError(f"{self.base_url}/tokenize gave {shown(ids)}, not a list of ids")
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        text = self._post("/detokenize", {"model": self.model, "tokens": list(ids)}, "prompt")
        if not isinstance(text, str):
            raise PromptError(f"{self.base_url}/detokenize gave {shown(text)}, not a text")
        return text


def exact_prompt(tokenizer: Tokenizer, length: int, rng: random.Random, attempts: int = 8) -> str:
    """A text of exactly `length` tokens. Every loop is bounded: a tokenizer that gives too
    few tokens for the words (none, or a constant) is refused, not waited on."""
    for _ in range(attempts):
        words: list[str] = []
        for _grow in range(_MAX_GROWTH):
            words += rng.choices(WORDS, k=max(16, length))
            ids = tokenizer.encode(" ".join(words))
            if len(ids) >= length + 8:
                break
        else:
            raise PromptError(
                f"the tokenizer gave {len(ids)} tokens for {len(words)} words: it cannot make a "
                f"prompt of {length} tokens (is it the model's tokenizer?)"
            )
        for cut in (length, length - 1, length + 1, length - 2, length + 2):
            text = tokenizer.decode(ids[:cut])
            if len(tokenizer.encode(text)) == length:
                return text
    raise PromptError(f"could not make a prompt of exactly {length} tokens with this tokenizer")


# Words are added `max(16, length)` at a time; a tokenizer gives at least a token a word or so,
# so a few rounds always reach the length: more mean the tokenizer is not counting the words.
_MAX_GROWTH = 8


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
