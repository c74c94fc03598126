"""``archivist eval``: build memory from labelled sessions the sync's way, then score search."""

from tasks.evaluation._build import (
    BuildReport,
    Produced,
    QueryRun,
    build_memory,
    check_namespaces,
    check_scratch,
    extract_directly,
    read_produced,
    run_queries,
)
from tasks.evaluation._inputs import EvalInputs, load_inputs
from tasks.evaluation._metrics import (
    OVERALL,
    QuestionScore,
    group_as_dict,
    level_as_dict,
    percentile,
    render_table,
    score_question,
    summarise,
)
from tasks.evaluation._summaries import (
    GoldSession,
    SummaryReport,
    read_gold,
    render_summary_table,
    rouge1,
    score_summaries,
    summary_report_as_dict,
)

__all__ = [
    "BuildReport",
    "EvalInputs",
    "GoldSession",
    "Produced",
    "SummaryReport",
    "OVERALL",
    "QueryRun",
    "QuestionScore",
    "build_memory",
    "check_namespaces",
    "check_scratch",
    "extract_directly",
    "read_gold",
    "read_produced",
    "render_summary_table",
    "rouge1",
    "score_summaries",
    "summary_report_as_dict",
    "group_as_dict",
    "level_as_dict",
    "load_inputs",
    "percentile",
    "render_table",
    "run_queries",
    "score_question",
    "summarise",
]
