"""Image parts of tool results: the cache-safe core reads text only, so the Compactor takes the images' decisions
itself, through the same decision record (`DecisionRecord.state` / `decide`): a recorded decision applies wherever
its image is; an undecided image in the region is stored as a blob under a handle derived from the session and its
content, and recorded set-if-absent like any other decision."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from mcp_offload.apis.message import Part, ToolResult
from mcp_offload.cachesafe.record import Decision, open_record, part_digest
from mcp_offload.compact.budget import IMAGE_TOKENS
from mcp_offload.compact.request import CompactReport, CompactRequest, StepContext
from mcp_offload.core import outputs
from mcp_offload.core.render import render_reference
from mcp_offload.core.tools import TOOLS_BY_NAME
from mcp_offload.errors import StoreError
from mcp_offload.store.handles import derived_handle


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image part of a tool result, with the digest its decision is recorded under."""

    message: int
    result: ToolResult
    part: Part
    tool: str | None
    digest: str


async def offload_images(ctx: StepContext, request: CompactRequest, report: CompactReport, region: range) -> bool:
    """Image parts of tool results (the core reads text only), through the same decision record: a recorded
    decision applies wherever its image is; an undecided image in `region` is stored as a blob under a handle
    derived from the session and its content. True when it stored something new."""
    images = _image_parts(request)
    if not images:
        return False
    record = open_record(ctx.services)
    try:
        decisions = (await record.state(ctx.core_session, [m.digest for m in images])).decisions
    except StoreError as exc:
        ctx.warn(report, f"could not read the decision record ({type(exc).__name__}: {exc}); images inline")
        return False
    new: dict[str, Decision] = {}
    for image in images:
        if image.digest in decisions or image.digest in new or image.message not in region:
            continue
        decision = await _store_image(ctx, image, report)
        if decision is not None:
            new[image.digest] = decision
    if new:
        try:
            decisions.update(await record.decide(ctx.core_session, new, tools=False))
        except StoreError as exc:
            ctx.warn(report, f"could not record the images ({type(exc).__name__}: {exc}); they stay inline")
            return False
        report.offloaded += [d.handle for d in new.values()]
    replaced: dict[int, dict[int, tuple[ToolResult, dict[int, str]]]] = {}
    for image in images:
        decision = decisions.get(image.digest)
        if decision is not None and decision.offloaded:
            slot = replaced.setdefault(image.message, {}).setdefault(image.result.slot, (image.result, {}))
            slot[1][image.part.index] = decision.text
    for i, slots in replaced.items():
        message = request.messages[i]
        for result, texts in slots.values():
            message = request.api.messages.replace_parts(message, result, texts)  # slots do not move
        request.replace(i, message)
    return bool(new)


def _image_parts(request: CompactRequest) -> list[ImagePart]:
    names = {c.call_id: c.name for k in request.known for c in k.view.calls}
    found: list[ImagePart] = []
    for i, known in enumerate(request.known):
        for result in known.view.results:
            tool = names.get(result.call_id)
            if tool in TOOLS_BY_NAME:
                continue  # one of our own tools (the model's retrieval): offloading it again would loop
            for part in result.parts:
                if part.image is not None:
                    key = "image:" + hashlib.sha256(part.image).hexdigest()
                    found.append(ImagePart(i, result, part, tool, part_digest(result.call_id, part.index, key)))
    return found


async def _store_image(ctx: StepContext, image: ImagePart, report: CompactReport) -> Decision | None:
    label = f"{image.tool or 'tool'} result {image.result.call_id}"
    assert image.part.image is not None
    try:
        stored = await outputs.offload_bytes(
            ctx.services,
            ctx.scope,
            image.part.image,
            mime_type=image.part.mime_type,
            name=label,
            source="compact",
            handle=derived_handle(ctx.scope.key, image.digest),
        )
    except Exception as exc:  # a store failure must not lose the image: it stays inline
        ctx.warn(report, f"could not store {label} ({type(exc).__name__}: {exc}); it stays inline")
        return None
    text = render_reference(stored)
    return Decision(stored.handle, text, image.result.call_id, image.tool, IMAGE_TOKENS, ctx.count(text))
