"""Scoring: the processor that puts scores on RAG spans before export, off the request path.

- ``processor.py``: ``ScoringSpanProcessor``, the OpenTelemetry span processor apps install.
- ``handoff.py``: every way a span leaves for downstream, exactly once (routed, passed, scored, late).
- ``worker.py``: the generic bounded queue and its thread and loop (knows nothing of spans or scores).
- ``scorer.py``: scoring one picked span (the suite, the judge, the bookkeeping after).
- ``jobs.py``: what the worker carries (``Picked``) and what scoring produces (``Outcome``).
- ``spans.py``: the scored copy of an ended span and the carrier span of late scores.
- ``judge_pause.py``: resting a judge that fails record after record (also the collector's scoring).
- ``exit.py``: the drain at interpreter exit, while thread pools still take work.
"""

from ragtrace.scoring.judge_pause import JudgePause as JudgePause
from ragtrace.scoring.judge_pause import PauseSettings as PauseSettings
