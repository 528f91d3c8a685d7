"""Amazon Bedrock's Converse API (`POST /model/{modelId}/converse`, `/converse-stream`) as one `LlmApi`."""

from __future__ import annotations

from typing import Any

from mcp_offload.apis.converse import errors
from mcp_offload.apis.converse.dialect import ConverseDialect
from mcp_offload.apis.converse.history import ConverseHistory
from mcp_offload.apis.converse.messages import ConverseFormat
from mcp_offload.apis.defaults import ApiDefaults
from mcp_offload.apis.dialect import Dialect
from mcp_offload.apis.history import History
from mcp_offload.apis.message import MessageFormat
from mcp_offload.apis.names import ApiName


class ConverseApi(ApiDefaults):
    # 503 ServiceUnavailableException ("The service isn't currently available. Try again later.", the Converse API
    # reference's errors; 429 ThrottlingException is the account's quota); botocore raises it by that name
    overloaded_status = 503
    name: ApiName = "converse"
    aliases: tuple[str, ...] = ("bedrock-converse", "bedrock_converse")
    title = "Amazon Bedrock Converse"
    answer_field = "output"

    messages: MessageFormat
    history: History
    dialect: Dialect

    def __init__(self) -> None:
        self.messages = ConverseFormat()
        self.history = ConverseHistory()
        self.dialect = ConverseDialect()

    def single_choice(self, request: dict[str, Any]) -> bool:
        return True  # Converse answers once

    def tool_definition(self, name: str, description: str, input_schema: dict[str, Any]) -> dict[str, Any]:
        return {"toolSpec": {"name": name, "description": description, "inputSchema": {"json": input_schema}}}

    def error_document(self, status: int, code: str, message: str) -> dict[str, Any]:
        return errors.error_document(status, code, message)

    def stream_error_event(self, code: str, message: str, sequence_number: int = 0) -> bytes:
        return errors.stream_error_event(code, message)

    def client_env(self, gateway: str) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": gateway}


CONVERSE = ConverseApi()
