"""Math envs: Countdown (``countdown``), generated word problems (``math_word``) and any question/answer
dataset (``math_qa``). Answer extraction and comparison shared by them live in ``answers``; the safe
arithmetic parser in ``arith``."""
