"""The Insights page: the painted charts show exactly ``Vault.insights()``."""

from __future__ import annotations

from typing import Any

import pytest

from ui.views.insights import HEALTH_ROWS, METRIC_ROWS, STORE_ORDER, TIER_ORDER, BarChart

pytestmark = pytest.mark.gui


def _check_matches(view: Any, ins: Any) -> None:
    bars = dict(view.store_chart.bars())
    assert bars == {label: ins.by_store.get(key, 0) for key, label in STORE_ORDER}
    tiers = dict(view.tier_chart.bars())
    assert tiers == {label: ins.by_tier.get(key, 0) for key, label in TIER_ORDER}
    assert sum(bars.values()) == sum(tiers.values())
    for key, _label, fmt in HEALTH_ROWS:
        assert view.health[key].text() == fmt.format(ins.health[key])
    assert len(view.stat_labels) == len(ins.statistics)
    for lbl, (_metric, _value, _sample, text) in zip(view.stat_labels, ins.statistics,
                                                     strict=True):
        assert text in lbl.text()
    # 002's monitoring (issue 27 item 9): each number as Insights says it, its tooltip
    # explaining it on both the name and the value.
    assert [m.key for m in ins.metrics] == [k for k, _l in METRIC_ROWS]
    for m in ins.metrics:
        name, value = view.metric_labels[m.key]
        assert value.text() == m.text and name.text() == m.label
        assert name.toolTip() == value.toolTip() == m.tip and len(m.tip) > 40


def test_charts_equal_insights_counts(qtbot: Any, open_page: Any, demo_vault: Any) -> None:
    view = open_page("insights")
    qtbot.waitUntil(lambda: view.insights is not None, timeout=10_000)
    ins = demo_vault.insights()
    _check_matches(view, ins)
    assert dict(view.store_chart.bars())["Facts"] == ins.by_store["semantic"] > 0
    assert ins.health["open_contradictions"] == 1
    assert view.health["open_contradictions"].text() == "1"
    assert view.stats_empty.isHidden()
    # The charts paint without error and have room for every bar.
    image = view.grab().toImage()
    assert not image.isNull()
    assert view.store_chart.sizeHint().height() >= len(STORE_ORDER) * BarChart.BAR_H


def test_charts_follow_changes(qtbot: Any, open_page: Any, window: Any,
                               demo_vault: Any) -> None:
    view = open_page("insights")
    qtbot.waitUntil(lambda: view.insights is not None, timeout=10_000)
    facts = dict(view.store_chart.bars())["Facts"]
    fact_id = next(c.a.id for c in demo_vault.contradictions("open"))
    result = demo_vault.archive(fact_id)  # as the detail pane would, then broadcast
    window.bridge.apply_changes(result.changes, None)
    qtbot.waitUntil(lambda: dict(view.store_chart.bars())["Facts"] == facts - 1,
                    timeout=10_000)
    _check_matches(view, demo_vault.insights())
    assert view.health["archived"].text() == "1"


def test_bar_chart_alone(qtbot: Any) -> None:
    chart = BarChart()
    qtbot.addWidget(chart)
    chart.set_bars([("a", 0, "#000"), ("b", 1_234, "#123456")])
    assert chart.bars() == [("a", 0), ("b", 1_234)]
    assert "b: 1,234" in chart.toolTip()
    chart.resize(300, chart.sizeHint().height())
    assert not chart.grab().toImage().isNull()
