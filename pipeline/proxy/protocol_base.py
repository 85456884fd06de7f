"""Base of the protocol models: accept unknown fields (passed upstream untouched) and say which they were.

Field types are checked strictly, as the providers' APIs check them: ``"stream": "false"``, ``"n": "2"``
or ``"max_tokens": 5.5`` is a 400 naming the field, not a value read one way here and another way by the
backend the raw body goes to (an integer is a valid number). Anything the proxy does not know is kept in
``model_extra`` and reported by ``unknown_fields()``.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.proxy.exceptions import ApiError
from sluice.errors import validation_problems

log = logging.getLogger(__name__)
_seen_unknown: set[tuple[str, str]] = set()


TOKENS_MAX = 2**31 - 1  # no model has more positions than this
TokenCount = Annotated[int, Field(ge=0, le=TOKENS_MAX)]
"""A number of tokens (``max_tokens`` and the like)."""
TokenLimit = Annotated[int, Field(ge=1, le=TOKENS_MAX)]
"""A limit on generated tokens where the API requires at least one."""
Seed = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
"""A sampling seed: a signed 64-bit integer, as the OpenAI API takes it."""


class OpenModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, strict=True)

    def unknown_fields(self) -> list[str]:
        return sorted(self.model_extra or ())


M = TypeVar("M", bound=OpenModel)


def validate_request(model: type[M], body: dict[str, Any], surface: str, metrics: Any = None) -> M:
    """Validate a request body; 400 with the first bad field as ``param``."""
    try:
        req = model.model_validate(body)
    except ValidationError as err:
        loc, msg = validation_problems(err)[0]
        more = f" (and {err.error_count() - 1} more problems)" if err.error_count() > 1 else ""
        raise ApiError(400, f"{loc}: {msg}{more}", param=loc or None) from None
    unknown = req.unknown_fields()
    if unknown:
        if metrics is not None:
            metrics.unknown_fields.labels(surface).inc(len(unknown))
        for name in unknown:
            if (surface, name) not in _seen_unknown and len(_seen_unknown) < 1000:
                _seen_unknown.add((surface, name))
                log.info("%s: passing through field %r the proxy does not interpret", surface, name)
    return req
