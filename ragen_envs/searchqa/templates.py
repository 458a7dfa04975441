"""The wording of generated questions: one template per fact, per relation phrase and per comparison.

Shared by the question generator (:mod:`ragen_envs.searchqa.questions`), which writes questions with them,
and the text solver (:mod:`ragen_envs.searchqa.solver`), which parses questions back with them.
"""

from __future__ import annotations

FACT_QUESTIONS = {
    "born": "In what year was {} born?",
    "occupation": "What is the occupation of {}?",
    "born_in": "In which city was {} born?",
    "studied_at": "Which university did {} attend?",
    "works_for": "Which company does {} work for?",
    "founded": "In what year was {} founded?",
    "population": "What is the population of {}?",
    "in_country": "In which country is {}?",
    "capital": "What is the capital of {}?",
    "language": "What is the official language of {}?",
    "industry": "In which industry does {} operate?",
    "employees": "How many people does {} employ?",
    "headquartered_in": "In which city is {} headquartered?",
    "founded_by": "Who founded {}?",
    "students": "How many students does {} have?",
    "located_in": "In which city is {} located?",
    "released": "In what year was {} released?",
    "genre": "What is the genre of {}?",
    "runtime": "How many minutes does {} run for?",
    "directed_by": "Who directed {}?",
    "produced_by": "Which company produced {}?",
}
"""The question asked about the last entity of a bridge path, per fact."""
RELATION_PHRASES = {
    "born_in": "the birthplace of {}",
    "studied_at": "the alma mater of {}",
    "works_for": "the employer of {}",
    "in_country": "the country of {}",
    "capital": "the capital of {}",
    "headquartered_in": "the headquarters city of {}",
    "founded_by": "the founder of {}",
    "located_in": "the home city of {}",
    "directed_by": "the director of {}",
    "produced_by": "the studio of {}",
}
"""How a path names the entity a relation leads to."""
FACT_LABELS = {
    "born": "born", "occupation": "occupation", "born_in": "birthplace", "studied_at": "alma mater",
    "works_for": "employer", "founded": "founded", "population": "population", "in_country": "country",
    "capital": "capital", "language": "official language", "industry": "industry", "employees": "employees",
    "headquartered_in": "headquarters", "founded_by": "founder", "students": "students", "located_in": "home city",
    "released": "released", "genre": "genre", "runtime": "runtime in minutes", "directed_by": "director",
    "produced_by": "studio",
}  # fmt: skip
"""How the oracle's reasoning names a fact it read ("The Silent Harbor: director Maren Holt.")."""
COMPARISONS = {
    ("person", "born"): ("Who was born earlier, {} or {}?", min),
    ("city", "founded"): ("Which was founded earlier, {} or {}?", min),
    ("company", "founded"): ("Which was founded earlier, {} or {}?", min),
    ("university", "founded"): ("Which was founded earlier, {} or {}?", min),
    ("film", "released"): ("Which was released earlier, {} or {}?", min),
    ("city", "population"): ("Which has the larger population, {} or {}?", max),
}
"""Comparable (kind, fact) pairs: the question and whether the smaller or larger value wins."""
