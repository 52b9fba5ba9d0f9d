"""Tokenizers for the engine.

Two families:

* ``WordTokenizer`` / ``CharTokenizer`` ("tiny" tokenizers): built at ``init`` from the
  environments' own text, saved with checkpoints and exported as JSON beside the ONNX policy
  so that a TypeScript policy tokenizes identically. The exact rule is written in
  ``workers/engine/PROTOCOL.md`` ("Tiny tokenizers"); keep the two in sync.
* ``HFTokenizer``: a thin wrapper over a local Hugging Face ``AutoTokenizer`` (never
  downloaded: only ``local_files_only`` paths).

All of them share one small interface (``TokenizerLike``) so the engine never special-cases
the model family.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

# ---------------------------------------------------------------------------------------------
# Shared interface
# ---------------------------------------------------------------------------------------------

# A chat message as sent over the protocol: {"role": "user", "content": "..."}.
Message = dict


class TokenizerLike(Protocol):
    vocab_size: int
    pad_id: int
    eos_id: int | None

    def encode(self, text: str) -> list[int]:
        """Text -> ids, no special tokens (used for responses and ``allowed`` strings)."""

    def decode(self, ids: Sequence[int]) -> str:
        """Ids -> text, special tokens skipped."""

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        """Each id's text on its own, specials included (for display: the token view)."""

    def encode_prompt(self, prompt: str | list[Message]) -> list[int]:
        """A prompt (text or chat messages) -> ids, with the model's leading specials."""

    def save(self, directory: Path) -> None:
        """Write the tokenizer into a checkpoint directory."""


class TokenizerError(ValueError):
    """A prompt or option the tokenizer cannot handle (reported as InvalidRequest)."""


# ---------------------------------------------------------------------------------------------
# Tiny tokenizers (word / char)
# ---------------------------------------------------------------------------------------------

# The pre-tokenization rule, identical in Python `re` and JavaScript (`/.../gu`): maximal runs
# of ASCII letters and digits, otherwise one Unicode code point per piece. Whitespace and
# punctuation are therefore single-character pieces, and decoding is plain concatenation.
PRETOKENIZE_PATTERN = r"[A-Za-z0-9]+|[^A-Za-z0-9]"
_PRETOKENIZE = re.compile(PRETOKENIZE_PATTERN, re.DOTALL)

# Special tokens take the first ids, in this order, in every tiny vocabulary.
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3

# The default alphabet of the char tokenizer when no corpus is given: printable ASCII + \t \n.
DEFAULT_CHARS = "\t\n" + "".join(chr(c) for c in range(32, 127))

TOKENIZER_FORMAT_VERSION = 1


def pretokenize(text: str) -> list[str]:
    """Split text into pieces: ASCII alphanumeric runs, else single code points."""
    return _PRETOKENIZE.findall(text)


@dataclass
class TinyTokenizer:
    """Word- or char-level tokenizer over a vocabulary built from the environments' text.

    Encoding (``kind == "word"``): each piece of ``pretokenize(text)`` that is in the
    vocabulary becomes its id; an unknown piece is spelled with its characters' ids, each
    unknown character becoming ``<unk>``. ``kind == "char"``: every code point is one token.
    """

    kind: str
    """"word" or "char"."""
    vocab: list[str]
    """Token strings; the index is the id. Starts with SPECIALS."""
    index: dict[str, int] = field(init=False, repr=False)

    pad_id: int = PAD_ID
    bos_id: int = BOS_ID
    eos_id: int = EOS_ID
    unk_id: int = UNK_ID

    def __post_init__(self) -> None:
        if self.kind not in ("word", "char"):
            raise TokenizerError(f"unknown tiny tokenizer kind {self.kind!r} (known: word, char)")
        if tuple(self.vocab[: len(SPECIALS)]) != SPECIALS:
            raise TokenizerError(f"vocabulary must start with {SPECIALS}")
        self.index = {tok: i for i, tok in enumerate(self.vocab)}
        if len(self.index) != len(self.vocab):
            raise TokenizerError("vocabulary has duplicate tokens")

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def build(cls, kind: str, corpus: Sequence[str] | None) -> "TinyTokenizer":
        """Vocabulary = SPECIALS + every distinct piece (word) and character (word and char) of
        the corpus, sorted by Unicode code points so the same corpus always gives the same ids."""
        if kind == "word":
            if not corpus:
                raise TokenizerError('tokenizer kind "word" needs a non-empty "corpus" of strings')
            pieces: set[str] = set()
            for text in corpus:
                for piece in pretokenize(text):
                    pieces.add(piece)
                    pieces.update(piece)  # characters too, for spelling unknown words
        elif kind == "char":
            pieces = set(DEFAULT_CHARS) if not corpus else {ch for text in corpus for ch in text}
        else:
            raise TokenizerError(f"unknown tokenizer kind {kind!r} (known: word, char, hf)")
        pieces -= set(SPECIALS)
        return cls(kind=kind, vocab=list(SPECIALS) + sorted(pieces))

    # --- interface ----------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        index, unk = self.index, self.unk_id
        if self.kind == "char":
            return [index.get(ch, unk) for ch in text]
        ids: list[int] = []
        for piece in pretokenize(text):
            tid = index.get(piece)
            if tid is not None:
                ids.append(tid)
            else:  # unknown word: spell it with its characters
                ids.extend(index.get(ch, unk) for ch in piece)
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        n_special = len(SPECIALS)
        return "".join(self.vocab[i] for i in ids if n_special <= i < len(self.vocab))

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        return [self.vocab[i] if 0 <= i < len(self.vocab) else "<unk>" for i in ids]

    def encode_prompt(self, prompt: str | list[Message]) -> list[int]:
        if not isinstance(prompt, str):
            raise TokenizerError("the tiny model has no chat template: send prompts as strings (or prompt_ids)")
        return [self.bos_id] + self.encode(prompt)

    # --- persistence --------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The JSON document a TypeScript policy loads (see PROTOCOL.md, "Tiny tokenizers")."""
        return {
            "format": "turnlens-tiny-tokenizer",
            "version": TOKENIZER_FORMAT_VERSION,
            "kind": self.kind,
            "pattern": PRETOKENIZE_PATTERN,
            "specials": {"pad": self.pad_id, "bos": self.bos_id, "eos": self.eos_id, "unk": self.unk_id},
            "add_bos": True,
            "vocab": self.vocab,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "TinyTokenizer":
        if doc.get("format") != "turnlens-tiny-tokenizer":
            raise TokenizerError("not a turnlens tiny tokenizer document")
        return cls(kind=doc["kind"], vocab=list(doc["vocab"]))

    def save(self, directory: Path) -> None:
        (Path(directory) / "tokenizer.json").write_text(json.dumps(self.to_json(), ensure_ascii=False, indent=1))

    @classmethod
    def load(cls, directory: Path) -> "TinyTokenizer":
        return cls.from_json(json.loads((Path(directory) / "tokenizer.json").read_text()))


# ---------------------------------------------------------------------------------------------
# Hugging Face tokenizer (local directory only)
# ---------------------------------------------------------------------------------------------


class HFTokenizer:
    """Wraps a local ``AutoTokenizer``; prompts go through the chat template when asked to."""

    def __init__(self, path: str, use_chat_template: bool | None = None):
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        has_template = getattr(self.tok, "chat_template", None) is not None
        if use_chat_template and not has_template:
            raise TokenizerError(f"tokenizer at {path} has no chat template")
        self.use_chat_template = has_template if use_chat_template is None else bool(use_chat_template)
        self.eos_id = self.tok.eos_token_id
        pad = self.tok.pad_token_id
        self.pad_id = pad if pad is not None else (self.eos_id if self.eos_id is not None else 0)
        self.vocab_size = len(self.tok)

    def encode(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=True)

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        # one decode per id: a byte-level BPE piece that is part of a multi-byte character shows as U+FFFD
        return [self.tok.decode([int(i)], skip_special_tokens=False) for i in ids]

    def encode_prompt(self, prompt: str | list[Message]) -> list[int]:
        if self.use_chat_template or not isinstance(prompt, str):
            if getattr(self.tok, "chat_template", None) is None:
                raise TokenizerError("chat messages need a tokenizer with a chat template")
            messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
            out = self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            if isinstance(out, dict) or hasattr(out, "keys"):  # BatchEncoding in newer versions
                out = out["input_ids"]
            return [int(i) for i in out]
        return list(self.tok.encode(prompt, add_special_tokens=True))

    def save(self, directory: Path) -> None:
        self.tok.save_pretrained(str(Path(directory) / "tokenizer"))
