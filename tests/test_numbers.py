"""The one percent formatter every page uses for a probability."""

import pytest

from ui.numbers import format_percent


@pytest.mark.parametrize("p, shown", [
    (0.0, "0%"),
    (1.0, "100%"),
    (0.5, "50%"),
    (0.997, "99.7%"),
    (0.12345, "12.3%"),
    (0.0123456, "1.23%"),
    (0.00042, "0.042%"),
    (5.44e-6, "0.000544%"),
    (1e-5, "0.001%"),  # a tiny probability never reads as 0.0%
    (3.1e-9, "3.1e-07%"),
    (1e-12, "1e-10%"),
    (0.99996, "99.996%"),  # just under 1 never reads as 100%
    (0.9999999, "99.99999%"),
])
def test_format_percent(p, shown):
    assert format_percent(p) == shown
