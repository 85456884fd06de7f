"""Base of the protocol models: accept unknown fields (passed upstream untouched) and say which they were.

Field types are checked (a wrong type is a 400 naming the field); anything the proxy does not know is
kept in ``model_extra`` and reported by ``unknown_fields()``.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.proxy.exceptions import ApiError
from sluice.errors import validation_problems

log = logging.getLogger(__name__)
_seen_unknown: set[tuple[str, str]] = set()


class OpenModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

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
