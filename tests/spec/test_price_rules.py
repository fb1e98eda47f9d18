"""Issue 34: where prices are needed (Vertex's training regions) and the rule that catches a
flex-start rate mixed in as an on-demand price, as a category."""

from __future__ import annotations

import pytest

from components.costs._billing import OUTLIER_RATIO, regional_outliers, suspect_prices
from components.rules._catalog import load_catalog, price_cells

REGIONS = ("r-a", "r-b", "r-c", "r-d", "r-e")


@pytest.mark.parametrize("gpu", ["NVIDIA_TESLA_T4", "NVIDIA_L4", "ANY_GPU"])
@pytest.mark.parametrize("odd", REGIONS)
def test_a_half_price_row_is_flagged_whatever_gpu_or_region(gpu: str, odd: str) -> None:
    prices = dict(zip(REGIONS, (1.0, 1.1, 0.95, 1.25, 1.05), strict=True))
    prices[odd] = prices[odd] / 2
    found = regional_outliers({(gpu, region): v for region, v in prices.items()})
    assert set(found) == {(gpu, odd)}
    assert "likely a flex-start DWS rate" in found[(gpu, odd)]


def test_normal_regional_spread_is_not_flagged() -> None:
    # +-30% around the median, as Compute Engine's GPU prices spread between regions.
    spread = {("G", r): v for r, v in zip(REGIONS, (0.75, 1.0, 1.0, 1.1, 1.3), strict=True)}
    assert regional_outliers(spread) == {}
    # Just under the ratio x the median (1.0) is flagged, just over is not.
    assert ("G", "x") in regional_outliers({**spread, ("G", "x"): 0.99 * OUTLIER_RATIO * 1.0})
    assert regional_outliers({**spread, ("G", "x"): 1.01 * OUTLIER_RATIO * 1.0}) == {}
    # Two regions are too few to call either an outlier.
    assert regional_outliers({("G", "a"): 1.0, ("G", "b"): 0.3}) == {}


def test_the_shipped_catalog_has_no_suspect_on_demand_price() -> None:
    # Every figure the rule catches is kept out of on-demand when prices.csv is built.
    assert suspect_prices(load_catalog()) == {}
    a100 = load_catalog().prices[("us-east4", "accelerator", "NVIDIA_A100_80GB")]
    assert a100.on_demand_usd is None and "regional check" in a100.source


def test_price_cells_are_vertex_training_regions_not_compute_engine_zones() -> None:
    catalog = load_catalog()
    cells = set(price_cells(catalog))
    # Offered for training by Vertex's locations page, without a Compute Engine zone here.
    assert ("accelerator", "NVIDIA_H100_80GB", "europe-west2") in cells
    assert ("accelerator", "NVIDIA_GB200", "us-east4") in cells
    # A zone offers it, but Vertex offers it for prediction only (a dagger): no training price.
    assert ("accelerator", "NVIDIA_L4", "asia-east1") not in cells
    assert ("machine", "g2-standard-4", "asia-east1") not in cells
    # Machines without GPUs are still priced in every region.
    assert ("machine", "n2-standard-4", "asia-east1") in cells
