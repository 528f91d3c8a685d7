"""The two error families: model-facing errors with stable codes mapped to JSON-RPC codes, operator errors apart;
the tree in `mcp_offload.errors`'s docstring is the real one; a resource read fails with the error's own code."""

from __future__ import annotations

import re
from pathlib import Path

import mcp.types as types
import pytest
from mcp import Client, MCPError

from mcp_offload import errors
from mcp_offload.cli.client_config import ClientConfigError
from mcp_offload.cli.exit_status import CommandDeclined, exit_status
from mcp_offload.core.services import build_services
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.proxy.config import ConfigError
from mcp_offload.settings import Settings
from mcp_offload.web.exposure import RefusedConfig

MODEL_FACING = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.OffloadError)]
BRANCHES = [errors.OffloadError, errors.StoreError]  # drawn without a code: callers catch them, nothing raises them
OPERATOR = [errors.SettingsError, ConfigError, ClientConfigError, RefusedConfig]
EXPECTED_RPC = {
    "InvalidHandle": types.INVALID_PARAMS,
    "UnknownHandle": -32002,  # MCP: resource not found
    "ExpiredHandle": -32002,
    "RangeError": types.INVALID_PARAMS,
    "SearchError": types.INVALID_PARAMS,
    "QueryError": types.INVALID_PARAMS,
    "InvalidContent": types.INVALID_PARAMS,
    "TooLarge": types.INVALID_PARAMS,
    "NotEnumerable": types.INVALID_PARAMS,
    "StoreFull": types.INTERNAL_ERROR,
    "StoreUnavailable": types.INTERNAL_ERROR,
    "HandleExists": types.INVALID_PARAMS,
    "ContextWindowExceeded": types.INVALID_PARAMS,
}


def test_the_docstring_tree_is_the_real_tree() -> None:
    doc = errors.__doc__ or ""
    drawn = re.findall(r"[├└]── (\S+)", doc)
    elsewhere = {f"{c.__module__.removeprefix('mcp_offload.')}.{c.__name__}" for c in OPERATOR[1:]}
    branches = {c.__name__ for c in BRANCHES}
    assert set(drawn) == {*branches, "OperatorError", *EXPECTED_RPC, "SettingsError", *elsewhere}
    for cls in (c for c in MODEL_FACING if c not in BRANCHES):  # each drawn with its code and JSON-RPC code
        assert re.search(rf"{cls.__name__}\s+{cls.code}\s+{cls.rpc_code}\b", doc), cls


def test_model_facing_errors_have_stable_distinct_codes() -> None:
    leaves = [c for c in MODEL_FACING if c not in BRANCHES]
    assert {c.__name__: c.rpc_code for c in leaves} == EXPECTED_RPC
    codes = [c.code for c in leaves]
    assert len(set(codes)) == len(codes)
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*", code) for code in codes)


@pytest.mark.parametrize("cls", OPERATOR)
def test_operator_errors_are_not_model_facing(cls: type[Exception]) -> None:
    assert issubclass(cls, errors.OperatorError)
    assert not issubclass(cls, errors.OffloadError)


@pytest.mark.parametrize(
    ("raised", "status", "stderr"),
    [
        (None, 0, ""),
        (CommandDeclined("nothing deleted"), 1, "prog: nothing deleted\n"),
        (
            errors.SettingsError("MCP_OFFLOAD_X='y' is not a valid int"),
            2,
            "prog: MCP_OFFLOAD_X='y' is not a valid int\n",
        ),
        (ConfigError("servers.json: no such file"), 2, "prog: servers.json: no such file\n"),
        (errors.StoreUnavailable("the store is unreachable"), 2, "prog: the store is unreachable\n"),
        (KeyboardInterrupt(), 130, ""),
        (BrokenPipeError(), 130, ""),
    ],
)
def test_one_mapping_from_error_to_exit_status(
    raised: BaseException | None, status: int, stderr: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def run() -> None:
        if raised is not None:
            raise raised

    assert exit_status(run, prog="prog") == status
    assert capsys.readouterr().err == stderr


def test_other_exceptions_are_bugs_and_propagate() -> None:
    def run() -> None:
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        exit_status(run)


async def test_a_resource_read_fails_with_the_errors_own_code(tmp_path: Path) -> None:
    services = build_services(Settings(store=str(tmp_path / "store"), jq_workers=1))
    try:
        async with Client(build_server(services)) as client:
            with pytest.raises(MCPError) as unknown:
                await client.read_resource("offload://outputs/out_" + "a" * 26)
            assert unknown.value.error.code == -32002
            with pytest.raises(MCPError) as invalid:
                await client.read_resource("offload://outputs/not-a-handle")
            assert invalid.value.error.code == types.INVALID_PARAMS
    finally:
        await services.aclose()


async def test_a_store_outage_is_not_a_bad_argument() -> None:
    """Redis down: the read fails with JSON-RPC internal error (-32603), not invalid params, and says so."""
    services = build_services(Settings(store="redis://127.0.0.1:1/0", jq_workers=1))
    try:
        async with Client(build_server(services)) as client:
            with pytest.raises(MCPError) as outage:
                await client.read_resource("offload://outputs/out_" + "a" * 26)
            assert outage.value.error.code == types.INTERNAL_ERROR
            assert "redis" in outage.value.error.message.lower() or "store" in outage.value.error.message.lower()
    finally:
        await services.aclose()
