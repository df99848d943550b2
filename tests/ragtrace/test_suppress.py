"""The suppression context is the one contrib instrumentations check before making a span."""

from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import is_http_instrumentation_enabled, is_instrumentation_enabled

from ragtrace._suppress import suppressed


def test_instrumentations_see_themselves_disabled_in_the_suppressed_context() -> None:
    assert is_instrumentation_enabled() and is_http_instrumentation_enabled()
    token = otel_context.attach(suppressed())
    try:
        assert not is_instrumentation_enabled()
        assert not is_http_instrumentation_enabled()
    finally:
        otel_context.detach(token)
    assert is_instrumentation_enabled()


def test_a_fresh_parent_keeps_nothing_of_the_current_context() -> None:
    token = otel_context.attach(otel_context.set_value("app-key", "request-7"))
    try:
        assert otel_context.get_value("app-key", suppressed()) == "request-7"
        assert otel_context.get_value("app-key", suppressed(otel_context.Context())) is None
    finally:
        otel_context.detach(token)
