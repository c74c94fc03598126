"""``archivist eval``: build memory from labelled sessions the sync's way, then score search."""

from tasks.evaluation._build import (
    BuildReport,
    QueryRun,
    build_memory,
    check_namespaces,
    check_scratch,
    day_run,
    run_queries,
)
from tasks.evaluation._inputs import (
    EvalInputs,
    EvalQuery,
    check_evidence,
    load_inputs,
    read_queries,
    read_sessions,
)
from tasks.evaluation._metrics import (
    OVERALL,
    GroupSummary,
    QuestionScore,
    group_as_dict,
    level_as_dict,
    percentile,
    render_table,
    score_question,
    summarise,
)

__all__ = [
    "BuildReport",
    "EvalInputs",
    "EvalQuery",
    "GroupSummary",
    "OVERALL",
    "QueryRun",
    "QuestionScore",
    "build_memory",
    "check_evidence",
    "check_namespaces",
    "check_scratch",
    "day_run",
    "group_as_dict",
    "level_as_dict",
    "load_inputs",
    "percentile",
    "read_queries",
    "read_sessions",
    "render_table",
    "run_queries",
    "score_question",
    "summarise",
]
