import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every `async def` test here runs on anyio's plugin (no pytest-asyncio needed)."""
    import inspect

    for item in items:
        function = getattr(item, "function", None)
        if function is not None and inspect.iscoroutinefunction(function) and "tests/tui/" in str(item.fspath):
            item.add_marker(pytest.mark.anyio)
