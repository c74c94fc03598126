"""``archivist eval``: build memory from labelled sessions the sync's way, then score search."""

from tasks.evaluation._build import (
    BuildReport,
    QueryRun,
    build_memory,
    check_namespaces,
    check_scratch,
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

__all__ = [
    "BuildReport",
    "EvalInputs",
    "OVERALL",
    "QueryRun",
    "QuestionScore",
    "build_memory",
    "check_namespaces",
    "check_scratch",
    "group_as_dict",
    "level_as_dict",
    "load_inputs",
    "percentile",
    "render_table",
    "run_queries",
    "score_question",
    "summarise",
]
