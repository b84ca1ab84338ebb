"""Text in, token ids out and back: tokenizer.json via `tokenizers`, and the model's chat template.

The chat template (tokenizer_config.json's ``chat_template``, a Jinja template) is rendered in
Jinja's immutable sandbox, as Hugging Face does; no code from the model repository ever runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import UsageError


class TokenizerError(UsageError):
    """tokenizer.json / tokenizer_config.json / generation_config.json is missing or malformed."""


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TokenizerError(f"{path}: cannot be read as JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise TokenizerError(f"{path}: expected a JSON object")
    return data


def _token_text(value: Any) -> str | None:
    """tokenizer_config stores special tokens as text or as {"content": text, ...}."""
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


class Tokenizer:
    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer as HFTokenizer

        path = folder / "tokenizer.json"
        if not path.is_file():
            raise TokenizerError(f"{folder}: tokenizer.json is missing; NeuroBrix needs a fast tokenizer file")
        try:
            self._tok = HFTokenizer.from_file(str(path))
        except Exception as exc:  # the tokenizers library raises a plain Exception on bad files
            raise TokenizerError(f"{path}: not a valid tokenizer.json: {exc}") from exc
        config_path = folder / "tokenizer_config.json"
        self.config = _read_json(config_path) if config_path.is_file() else {}
        gen_path = folder / "generation_config.json"
        self.generation = _read_json(gen_path) if gen_path.is_file() else {}
        # transformers >= 5 saves the template as chat_template.jinja; older files keep it in tokenizer_config
        template_file = folder / "chat_template.jinja"
        self.chat_template: str | None = (
            template_file.read_text(encoding="utf-8") if template_file.is_file() else self.config.get("chat_template")
        )
        if isinstance(self.chat_template, list):  # named templates: take "default"
            named = {t.get("name"): t.get("template") for t in self.chat_template if isinstance(t, dict)}
            self.chat_template = named.get("default")
        self.bos_token = _token_text(self.config.get("bos_token"))
        self.eos_token = _token_text(self.config.get("eos_token"))

    def eos_ids(self, config_eos: Any = None) -> set[int]:
        """Token ids that end generation: generation_config's, else config.json's, else the eos token."""
        ids: set[int] = set()
        for value in (self.generation.get("eos_token_id"), config_eos):
            if value is None:
                continue
            ids.update(value if isinstance(value, list) else [value])
            break
        if not ids and self.eos_token is not None:
            token_id = self._tok.token_to_id(self.eos_token)
            if token_id is not None:
                ids.add(token_id)
        return ids

    def render_chat(self, prompt: str) -> str:
        from jinja2.exceptions import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message: str) -> None:
            raise TemplateError(message)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        try:
            return env.from_string(self.chat_template or "").render(
                messages=[{"role": "user", "content": prompt}], add_generation_prompt=True,
                bos_token=self.bos_token or "", eos_token=self.eos_token or "",
            )
        except TemplateError as exc:
            raise TokenizerError(f"the model's chat template failed: {exc}; try --no-chat") from exc

    def encode_prompt(self, prompt: str, chat: bool) -> list[int]:
        """Token ids of the prompt: through the chat template when asked and the model has one."""
        if chat and self.chat_template:
            return self._tok.encode(self.render_chat(prompt), add_special_tokens=False).ids
        return self._tok.encode(prompt, add_special_tokens=True).ids

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids, skip_special_tokens=True)
