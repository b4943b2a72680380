"""Neutron's list semantics: filters, ``fields``, sorting, pagination and links. Pure.

Follows neutron/api/api_common.py: unknown filter keys are a 400 naming them,
repeated values of one key are ORed, ``sort_key``/``sort_dir`` come in pairs
over sortable attributes, pagination (``limit``, ``marker``, ``page_reverse``)
orders by the sort keys then ``id`` and adds ``<collection>_links`` with
``next`` (when the page is full) and ``previous`` links.
"""

from __future__ import annotations

import bisect
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

Doc = dict[str, Any]
Params = list[tuple[str, str]]
T = TypeVar("T")

CONTROL_KEYS = frozenset({"fields", "sort_key", "sort_dir", "limit", "marker", "page_reverse"})
TAG_KEYS = frozenset({"tags", "tags-any", "not-tags", "not-tags-any"})
TRUE_WORDS = frozenset({"true", "1", "yes", "y", "t", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "n", "f", "off"})


class ApiError(Exception):
    """An error answered as ``{"NeutronError": {type, message, detail}}``."""

    def __init__(self, status: int, kind: str, message: str, root: str = "NeutronError",
                 raw: Doc | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.root = root
        self.raw = raw

    def body(self) -> Doc:
        if self.raw is not None:
            return self.raw
        return {self.root: {"type": self.kind, "message": self.message, "detail": ""}}


def bad_request(message: str) -> ApiError:
    return ApiError(400, "HTTPBadRequest", message)


def found(record: T | None, kind: str, message: str) -> T:
    """``record``, or Neutron's 404 ``kind`` saying ``message`` when there is none."""
    if record is None:
        raise ApiError(404, kind, message)
    return record


def to_bool(value: str) -> bool:
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ApiError(400, "InvalidInput",
                   f"Invalid input for operation: '{value}' cannot be converted to boolean.")


@dataclass(frozen=True)
class CollectionSpec:
    """What one collection accepts."""

    name: str
    filter_keys: frozenset[str]
    sort_keys: frozenset[str] = frozenset()
    # sort keys refused with "'K' is an invalid attribute for sort key" (computed attributes)
    unsortable: frozenset[str] = frozenset()
    bool_keys: frozenset[str] = frozenset()
    tags: bool = False
    extra_filters: frozenset[str] = field(default_factory=frozenset)


def grouped(params: Params) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in params:
        out.setdefault(key, []).append(value)
    return out


def parse_filters(params: Params, spec: CollectionSpec) -> dict[str, list[Any]]:
    """Validated filters: key -> accepted values (booleans converted)."""
    invalid: list[str] = []
    filters: dict[str, list[Any]] = {}
    allowed = spec.filter_keys | (TAG_KEYS if spec.tags else frozenset()) | spec.extra_filters
    for key, values in grouped(params).items():
        if key in CONTROL_KEYS:
            continue
        if key not in allowed:
            invalid.append(key)
            continue
        kept = [v for v in values if v]
        if key in spec.bool_keys:
            filters[key] = [to_bool(v) for v in kept]
        elif kept:
            filters[key] = kept
    if invalid:
        raise bad_request(f"{invalid} is invalid attribute for filtering")
    return {k: v for k, v in filters.items() if v}


def parse_sorts(params: Params, spec: CollectionSpec) -> list[tuple[str, bool]]:
    """``[(key, ascending)]`` from sort_key/sort_dir pairs."""
    keys = [v for k, v in params if k == "sort_key" and v]
    dirs = [v for k, v in params if k == "sort_dir" and v]
    if len(keys) != len(dirs):
        raise bad_request("The number of sort_keys and sort_dirs must be same")
    computed = next((k for k in keys if k in spec.unsortable), None)
    if computed is not None:
        raise ApiError(400, "BadRequest", f"Bad {spec.name} request: '{computed}' is an invalid "
                       "attribute for sort key.")
    absent = [k for k in keys if k not in spec.sort_keys]
    if absent:
        raise bad_request(f"{absent} is invalid attribute for sort_keys")
    wrong = [d for d in dirs if d not in ("asc", "desc")]
    if wrong:
        raise bad_request(
            f"{wrong} is invalid value for sort_dirs, valid value is 'asc' and 'desc'")
    return [(k, d == "asc") for k, d in zip(keys, dirs, strict=True)]


def parse_limit(params: Params) -> int:
    raw = next((v for k, v in params if k == "limit"), "0")
    try:
        limit = int(raw)
    except ValueError:
        limit = -1
    if limit < 0:
        raise ApiError(400, "BadRequest",
                       f"Bad limit request: Limit must be an integer 0 or greater and not '{raw}'.")
    return limit


def _matches_tags(tags: list[str], filters: dict[str, list[Any]]) -> bool:
    have = set(tags)
    for key, values in filters.items():
        wanted = {t for v in values for t in str(v).split(",") if t}
        if key == "tags" and not wanted <= have:
            return False
        if key == "tags-any" and not wanted & have:
            return False
        if key == "not-tags" and wanted and wanted <= have:
            return False
        if key == "not-tags-any" and wanted & have:
            return False
    return True


def matches(doc: Doc, filters: dict[str, list[Any]]) -> bool:
    """Whether ``doc`` passes every filter (values of one key are ORed)."""
    tag_filters = {k: v for k, v in filters.items() if k in TAG_KEYS}
    if tag_filters and not _matches_tags(doc.get("tags", []), tag_filters):
        return False
    for key, values in filters.items():
        if key in TAG_KEYS:
            continue
        have = doc.get(key)
        if isinstance(have, bool) or have is None:
            if have not in values and str(have) not in values:
                return False
        elif str(have) not in {str(v) for v in values}:
            return False
    return True


def _sort_value(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, "")
    return (1, value if isinstance(value, int | float | str) else str(value))


def _sort_key(key: str) -> Callable[[Doc], tuple[int, Any]]:
    def value(doc: Doc) -> tuple[int, Any]:
        return _sort_value(doc.get(key))

    return value


def sort_docs(docs: list[Doc], sorts: list[tuple[str, bool]]) -> list[Doc]:
    for key, ascending in reversed(sorts):
        docs.sort(key=_sort_key(key), reverse=not ascending)
    return docs


@dataclass
class Page:
    """Pagination state of one list request."""

    limit: int
    marker: str | None
    reverse: bool


def parse_page(params: Params) -> Page:
    marker = next((v for k, v in params if k == "marker"), None) or None
    reverse = next((v for k, v in params if k == "page_reverse"), "False").lower() == "true"
    return Page(parse_limit(params), marker, reverse)


def _marker_index(items: Sequence[Any], marker: str, key: Callable[[Any], str],
                  by_key: bool) -> int | None:
    if by_key:
        index = bisect.bisect_left(items, marker, key=key)
        return index if index < len(items) and key(items[index]) == marker else None
    return next((i for i, item in enumerate(items) if key(item) == marker), None)


#: Looks a marker's object up, raising the collection's NotFound when there is none.
MarkerLookup = Callable[[str], object]


def paginate(items: Sequence[Any], page: Page, key: Callable[[Any], str],
             by_key: bool = False, marker_lookup: MarkerLookup | None = None) -> list[Any]:
    """Neutron's pagination over items already in order (``by_key``: sorted by key).

    A marker not among ``items`` is looked up with ``marker_lookup`` (which
    raises the collection's NotFound when there is no such object): an
    existing one positions the page by id. Without a lookup (agents) an unknown
    marker is ignored: the first page is answered.
    """
    if not page.limit:
        return list(items)
    if page.marker:
        index = _marker_index(items, page.marker, key, by_key)
        if index is None:
            if marker_lookup is None:
                return paginate(items, Page(page.limit, None, page.reverse), key)
            marker_lookup(page.marker)
            if not by_key:
                return []
            index = bisect.bisect_left(items, page.marker, key=key) - (0 if page.reverse else 1)
            index = max(index, -1)
    else:
        index = len(items) if page.reverse else 0
    if page.reverse:
        return list(items[max(index - page.limit, 0):index])
    if page.marker:
        index += 1
    return list(items[index:index + page.limit])


def links(base_url: str, params: Params, page: Page, ids: list[str]) -> list[Doc]:
    """The ``next``/``previous`` links Neutron adds when paginating."""
    if not page.limit:
        return []
    out: list[Doc] = []
    kept = [(k, v) for k, v in params if k not in ("marker", "page_reverse")]
    # no next link after a short forward page, no previous one after a short reverse page
    for rel, reverse, marker in (("next", False, ids[-1:]), ("previous", True, ids[:1])):
        if len(ids) < page.limit and page.reverse == reverse:
            continue
        query = [*kept, *(("marker", m) for m in marker)]
        query += [("page_reverse", "True")] if reverse else []
        out.append({"rel": rel, "href": f"{base_url}?{urllib.parse.urlencode(query)}"})
    return out


def select_fields(doc: Doc, fields: list[str]) -> Doc:
    if not fields:
        return doc
    return {k: v for k, v in doc.items() if k in fields}


def list_collection(records: Sequence[Any], render: Callable[[Any], Doc],  # noqa: PLR0917
                    record_id: Callable[[Any], str], params: Params, spec: CollectionSpec,
                    base_url: str, by_id: Sequence[Any] | None = None,
                    marker_lookup: MarkerLookup | None = None) -> Doc:
    """Answer a list request over ``records`` (in creation order; ``by_id``: the same
    records already sorted by id, to page large collections quickly)."""
    filters = parse_filters(params, spec)
    sorts = parse_sorts(params, spec)
    page = parse_page(params)
    fields = [v for k, v in params if k == "fields" and v]
    if not filters and not sorts:
        ordered: Sequence[Any] = records
        if page.limit:
            ordered = by_id if by_id is not None else sorted(records, key=record_id)
        docs = [render(r) for r in paginate(ordered, page, record_id, bool(page.limit),
                                            marker_lookup)]
    else:
        docs = [d for d in (render(r) for r in records) if matches(d, filters)]
        if sorts or page.limit:
            docs = sort_docs(docs, [*sorts, ("id", True)] if page.limit else sorts)
        by_id_only = not sorts
        docs = paginate(docs, page, lambda d: str(d.get("id")), by_id_only and bool(page.limit),
                        marker_lookup)
    result: Doc = {spec.name: [select_fields(d, fields) for d in docs]}
    page_links = links(base_url, params, page, [str(d.get("id")) for d in docs])
    if page_links:
        result[f"{spec.name}_links"] = page_links
    return result
