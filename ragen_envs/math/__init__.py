"""Math envs: Countdown (``countdown``), generated word problems (``math_word``, families in ``word_money``,
``word_counts`` and ``word_rates`` on top of ``word_kit``) and any question/answer dataset (``math_qa``, loader
in ``qa_data``). Answer extraction and comparison shared by them live in ``answers``, the single-answer env
they share in ``answer_env``, the safe arithmetic parser in ``arith``."""
