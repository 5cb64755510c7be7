from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("starlette")

from cavbench.gateway import GatewaySession
from cavbench.gateway.client import Channel, HttpChannel
from cavbench.gateway.rest import RestGateway


@pytest.fixture(scope="session")
def rest_gateway() -> Iterator[RestGateway]:
    with RestGateway() as gateway:
        yield gateway


@pytest.fixture(scope="session")
def rest_connect(
    rest_gateway: RestGateway,
) -> Iterator[Callable[[GatewaySession], tuple[Channel, Callable[[], None]]]]:
    import httpx

    client = httpx.Client(timeout=30.0)

    def connect(session: GatewaySession) -> tuple[Channel, Callable[[], None]]:
        url = rest_gateway.open(session)
        return HttpChannel(url, session.run_token, client), lambda: rest_gateway.close(session)

    yield connect
    client.close()
