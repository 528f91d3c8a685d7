"""Bedrock's error document (the Converse API's, and every Bedrock runtime operation's): the HTTP status, the
`x-amzn-ErrorType` header naming the exception (`ValidationException:<namespace>`; boto3 reads the code from it) and
`{"message": …}` as the body. In an event stream a failure is an exception frame (`:message-type: exception`,
`:exception-type` the stream union's member, `internalServerException`, …): here the SSE event named by that member,
which the Bedrock framing turns into the frame.
(API reference: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html#API_runtime_Converse_Errors)
"""

from __future__ import annotations

from typing import Any

from mcp_offload.apis.sse import encode_event

EXCEPTIONS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
NAMESPACE = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
# the stream union's members (ConverseStreamOutput, ResponseStream): a failure inside a stream is one of these
STREAM_EXCEPTIONS = {
    400: "validationException",
    424: "modelStreamErrorException",
    429: "throttlingException",
    500: "internalServerException",
    503: "serviceUnavailableException",
}


def exception_name(status: int) -> str:
    return EXCEPTIONS.get(status, "InternalServerException" if status >= 500 else "ValidationException")


def error_document(status: int, code: str, message: str) -> dict[str, Any]:
    return {"message": message}


def error_headers(status: int) -> tuple[tuple[str, str], ...]:
    return (("x-amzn-errortype", exception_name(status) + NAMESPACE), ("content-type", "application/json"))


def stream_error_event(code: str, message: str, sequence_number: int = 0, *, status: int = 500) -> bytes:
    """The event that ends a stream the gateway cannot finish: Bedrock's exception, as an SSE event named by it."""
    return encode_event({"message": message}, STREAM_EXCEPTIONS.get(status, "internalServerException"))
