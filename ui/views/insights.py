"""Insights: memories by store and by tier (bar charts painted with QPainter), health
(average strength and confidence, confirmed, archived, superseded, open contradictions), the
implicit statistics in words, and how the memory is used (002's monitoring: retrieval
efficiency, layer utilisation, promotion and archive rates, quality ratio, each explained in
its tooltip). Layer: ui. GUI thread; the numbers come from
``Vault.insights()`` through ``ui.tasks``.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Sequence

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import (
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QLabel,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app import words
from app.api import Insights, VaultAPI
from app.changes import Changes
from ui import theme
from ui.bridge import CoreBridge
from ui.views.page import Page

log = logging.getLogger(__name__)

STORE_ORDER = tuple((key, words.STORE_NAMES[key]) for key in
                    ("short_term", "episodic", "semantic", "procedural", "implicit"))
TIER_ORDER = tuple((key, words.TIER_CHART[key]) for key in ("hot", "warm", "cold"))
HEALTH_ROWS = (("avg_composite", "Average strength", "{:.2f}"),
               ("avg_confidence", "Average confidence", "{:.2f}"),
               ("confirmed", "Confirmed by you", "{:,}"),
               ("archived", "Archived", "{:,}"),
               ("superseded", "Earlier versions (kept in the history)", "{:,}"),
               ("open_contradictions", "Open contradictions", "{:,}"),
               ("total", "Memories in all (every status)", "{:,}"))
# 002's monitoring (issue 27 item 9): key and label, in its order; the words and tooltips
# come with the numbers (``app.services.monitoring``).
METRIC_ROWS = (("retrieval_efficiency", "Recalled memories used"),
               ("layer_utilisation", "What assistants read, by kind"),
               ("promotion_rate", "Events that became lasting memories"),
               ("archive_rate", "Archived"),
               ("quality_ratio", "Strong memories"))


class BarChart(QWidget):
    """Horizontal bars with a label and the value, painted by hand (no QtCharts)."""

    BAR_H = 22
    GAP = 8

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bars: list[tuple[str, int, QColor]] = []
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_bars(self, bars: Sequence[tuple[str, int, str]]) -> None:
        self._bars = [(label, int(value), QColor(color)) for label, value, color in bars]
        self.setToolTip("\n".join(f"{label}: {value:,}" for label, value, _c in self._bars))
        self.setAccessibleDescription(self.toolTip())
        self.updateGeometry()
        self.update()

    def bars(self) -> list[tuple[str, int]]:
        """What is drawn: (label, value) per bar, in order."""
        return [(label, value) for label, value, _c in self._bars]

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        n = max(len(self._bars), 1)
        return QSize(320, n * self.BAR_H + (n - 1) * self.GAP + 4)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt name)
        return QSize(200, self.sizeHint().height())

    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 (Qt name)
        if not self._bars:
            return
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        fm = p.fontMetrics()
        text_color = self.palette().color(QPalette.ColorRole.WindowText)
        label_w = max(fm.horizontalAdvance(label) for label, _v, _c in self._bars) + 12
        value_w = max(fm.horizontalAdvance(f"{v:,}") for _l, v, _c in self._bars) + 10
        top = max(v for _l, v, _c in self._bars) or 1
        span = max(self.width() - label_w - value_w, 10)
        y = 2.0
        for label, value, color in self._bars:
            p.setPen(text_color)
            p.drawText(QRectF(0, y, label_w - 8, self.BAR_H),
                       int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), label)
            w = span * value / top
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(color)
            if value:
                p.drawRoundedRect(QRectF(label_w, y + 2, max(w, 2.0), self.BAR_H - 4), 3, 3)
            p.setPen(text_color)
            p.drawText(QRectF(label_w + w + 6, y, value_w, self.BAR_H),
                       int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                       f"{value:,}")
            y += self.BAR_H + self.GAP
        p.end()


class InsightsView(Page):
    """Owned by the main window's page stack; lives on the GUI thread. Refreshes from change
    flags when it is the current page, otherwise when it next becomes current (insights read
    every active row: only when looked at)."""

    def __init__(self, vault: VaultAPI, bridge: CoreBridge, parent: QWidget | None = None
                 ) -> None:
        super().__init__(vault, bridge, parent)
        self.insights: Insights | None = None

        title = QLabel("<h2>Insights</h2>")
        self.summary = QLabel("Loading…")
        self.summary.setObjectName("summary")
        self.summary.setWordWrap(True)
        self.store_chart = BarChart()
        self.tier_chart = BarChart()
        store_box = QGroupBox("Active memories by kind")
        QVBoxLayout(store_box).addWidget(self.store_chart)
        tier_box = QGroupBox("Active memories by freshness")
        tl = QVBoxLayout(tier_box)
        tl.addWidget(self.tier_chart)
        tier_note = QLabel(words.TIER_NOTE)
        tier_note.setWordWrap(True)
        tier_note.setStyleSheet(theme.NOTE_STYLE)
        tl.addWidget(tier_note)
        tl.addStretch(1)
        self.health: dict[str, QLabel] = {}
        health_box = QGroupBox("Health")
        form = QFormLayout(health_box)
        for key, label, _fmt in HEALTH_ROWS:
            value = QLabel("…")
            value.setObjectName(f"health_{key}")
            self.health[key] = value
            form.addRow(label, value)
        self.stats_box = QGroupBox("Patterns Kept noticed")
        self.stats_layout = QVBoxLayout(self.stats_box)
        self.stat_labels: list[QLabel] = []
        self.stats_empty = QLabel("Nothing yet: statistics appear after a few conversations "
                                  "and a consolidation run.")
        self.stats_empty.setWordWrap(True)
        self.stats_layout.addWidget(self.stats_empty)

        grid = QGridLayout()
        grid.addWidget(store_box, 0, 0)
        grid.addWidget(tier_box, 0, 1)
        grid.addWidget(health_box, 1, 0)
        grid.addWidget(self.stats_box, 1, 1)
        grid.addWidget(self._make_use_box(), 2, 0, 1, 2)
        grid.setColumnStretch(0, 1)
        grid.setColumnStretch(1, 1)
        content = QWidget()
        cl = QVBoxLayout(content)
        cl.addWidget(title)
        cl.addWidget(self.summary)
        cl.addLayout(grid)
        cl.addStretch(1)
        self.fill_scrolled(content, "Insights")
        self.refresh()

    def _make_use_box(self) -> QGroupBox:
        """002's monitoring (issue 27 item 9): one row per number, its tooltip saying what it
        means, and assistants' reads by kind as bars."""
        self.use_box = QGroupBox("How your memory is used")
        form = QFormLayout(self.use_box)
        self.metric_labels: dict[str, tuple[QLabel, QLabel]] = {}
        for key, label in METRIC_ROWS:
            name, value = QLabel(label), theme.plain(QLabel("…"))
            value.setObjectName(f"metric_{key}")
            value.setWordWrap(True)
            self.metric_labels[key] = (name, value)
            form.addRow(name, value)
        self.reads_chart = BarChart()
        self.reads_chart.setObjectName("readsByKind")
        form.addRow(self.reads_chart)
        return self.use_box

    def _fill_metrics(self, ins: Insights) -> None:
        self.use_box.setTitle(f"How your memory is used (last {ins.period_days} days)"
                              if ins.period_days else "How your memory is used")
        for m in ins.metrics:
            labels = self.metric_labels.get(m.key)
            if labels is None:
                continue
            name, value = labels
            name.setText(m.label)
            value.setText(m.text)
            for w in (name, value):
                w.setToolTip(m.tip)
                w.setAccessibleDescription(m.tip)
        colors = theme.STORE_COLORS
        self.reads_chart.set_bars([(label, ins.reads_by_store.get(key, 0),
                                    colors[i % len(colors)])
                                   for i, (key, label) in enumerate(STORE_ORDER)])
        self.reads_chart.setVisible(bool(ins.reads_by_store))

    def refresh(self) -> None:
        self.load(self.vault.insights, self._fill)

    def wants(self, changes: Changes) -> bool:
        return changes.memories or changes.contradictions or changes.runs

    def _fill(self, ins: Insights) -> None:
        self.insights = ins
        known = [k for k, _l in STORE_ORDER]
        stores = [(label, ins.by_store.get(key, 0)) for key, label in STORE_ORDER]
        stores += [(words.store_name(key), n) for key, n in sorted(ins.by_store.items())
                   if key not in known]
        colors = theme.STORE_COLORS
        self.store_chart.set_bars([(label, n, colors[i % len(colors)])
                                   for i, (label, n) in enumerate(stores)])
        self.tier_chart.set_bars([(label, ins.by_tier.get(key, 0), theme.TIER_COLORS[i])
                                  for i, (key, label) in enumerate(TIER_ORDER)])
        # The list's count (one row per thing said; storage.browse.listed_clause), and the
        # behaviour patterns apart: "23 memories in your lists, and 5 patterns" (issue 25).
        patterns = ins.by_store.get("implicit", 0)
        listed = sum(ins.by_store.values()) - patterns
        self.summary.setText(f"{words.count(listed, 'memory', 'memories')} in your lists "
                             "(one per thing said)"
                             + (f", and {words.count(patterns, 'pattern', 'patterns')}"
                                if patterns else "") + ". "
                             "Strength combines importance, "
                             "recency, use, feeling and people; confidence is how sure Kept is "
                             "that a memory is right.")
        for key, _label, fmt in HEALTH_ROWS:
            value = ins.health.get(key)
            self.health[key].setText(fmt.format(value) if value is not None else "–")
        for lbl in self.stat_labels:
            self.stats_layout.removeWidget(lbl)
            lbl.deleteLater()
        self.stat_labels = []
        for _metric, _value, sample, text in ins.statistics:
            aside = theme.muted_html(f"(from {words.count(sample, 'memory', 'memories')})")
            lbl = QLabel(f"• {html.escape(text)} {aside}")
            lbl.setWordWrap(True)
            self.stats_layout.addWidget(lbl)
            self.stat_labels.append(lbl)
        self.stats_empty.setVisible(not ins.statistics)
        self._fill_metrics(ins)
