"""One table of methods: wire.METHODS is served by the server's ROUTES and called by
CodyClient, so adding a method is one row in each."""

from __future__ import annotations

import inspect
import re

from cody_lsp.client.connection import CodyClient
from cody_lsp.protocol import wire
from cody_lsp.server.lsp.server import ROUTES


def snake(method: str) -> str:
    name = method.split("/", 1)[1]
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def test_the_server_serves_every_method_of_the_table_and_no_other():
    assert sorted(ROUTES) == sorted(wire.METHODS)


def test_the_client_has_a_method_for_every_method_of_the_table():
    missing = [m for m in wire.METHODS if not inspect.iscoroutinefunction(getattr(CodyClient, snake(m), None))]
    assert not missing, f"CodyClient has no method for {missing} (expected names: {[snake(m) for m in missing]})"


def test_each_params_type_belongs_to_one_method():
    params_types = [params for params, _result in wire.METHODS.values()]
    assert len(set(params_types)) == len(params_types)
