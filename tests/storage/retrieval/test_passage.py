"""The passage of a hit: the part of its memory that answers, chosen without a model."""

from __future__ import annotations

from storage.retrieval.explain import GAP, PASSAGE_CHARS, Question, passage

DENTIST = (
    "Dentist appointment. Alice needs to move their appointment with Dr. Moreau, the one on "
    "Tuesday. Alice: Anything after 4pm next week. Mornings are impossible with work. Aria: "
    "The practice has Wednesday at 16:30 or Thursday at 17:15. Alice: Wednesday at 16:30. "
    "Aria: Booked: Dr. Moreau, Wednesday 16:30. Aria will remind you the day before. Aria: "
    "They asked whether you still have the sensitivity in the lower left molar. Alice: Mostly "
    "with cold drinks. Aria will add that to the appointment note so Dr. Moreau can check it."
)


def test_a_when_question_gets_the_sentences_with_the_time_under_their_speaker() -> None:
    shown = passage(DENTIST, "when is the dentist?")

    assert "Aria: Booked: Dr. Moreau, Wednesday 16:30." in shown
    assert len(shown) <= PASSAGE_CHARS < len(DENTIST)
    assert "molar" not in shown and "cold drinks" not in shown


def test_a_short_memory_is_its_own_passage() -> None:
    fact = "Alice prefers window seats, and nothing before 8am please. (2026-11-27)"

    assert passage(fact, "which seat does Alice like?") == fact


def test_a_question_that_matches_nothing_gets_the_beginning() -> None:
    shown = passage(DENTIST, "zeppelin hangar code")

    assert DENTIST.startswith(shown) and len(shown) <= PASSAGE_CHARS


def test_a_long_turn_gets_the_window_that_holds_the_answer() -> None:
    filler = "The nightly billing backup copied every volume to the eastern site again. " * 20
    turn = f"mara: {filler}The rack 7 cable is quetzalcoatlite and it stays. {filler}"

    shown = passage(turn, "Which cable is quetzalcoatlite?")

    assert "quetzalcoatlite" in shown and len(shown) <= PASSAGE_CHARS
    assert shown.startswith("mara: ")  # the speaker's label, though the window is mid-turn


def test_how_much_picks_the_sentence_with_the_amount() -> None:
    summary = (
        "Mara went to the running store on Saturday and tried a lot of models on the "
        "treadmill with the staff. The gait analysis showed that she overpronates on the left "
        "foot, more than expected. She bought the Brooks Adrenaline in the end. The new "
        "trainers cost 140 euros with the member discount. She will break them in slowly "
        "over two weeks before any long run, and keep the old pair for rainy days."
    )

    shown = passage(summary, "How much did the new trainers set me back?")

    assert "140 euros" in shown and "rainy days" not in shown


def test_the_sentence_after_a_matching_question_is_its_answer() -> None:
    summary = (
        "Jonas and Mia planned the weekend in the mountains with the whole group of friends. "
        "Mia asked: which trail do we take for the ridge on Saturday morning? Jonas: the "
        "northern one, it has less snow this week. They talked about food, the car and the "
        "weather for a while, and about who brings the stove and the second tent this time."
    )

    shown = passage(summary, "Which trail for the ridge?")

    assert "the northern one, it has less snow this week." in shown


def test_words_match_across_case_accents_and_endings() -> None:
    summary = (
        "Lucía y Pablo hablaron del viaje y de los hoteles de la costa durante un buen rato. "
        "Pablo reservó la habitación en Cádiz para el viernes 12 a las 18:00 con desayuno. "
        "Después hablaron de los perros, del trabajo de Lucía y de la boda de su prima en "
        "junio, que todavía no tiene fecha ni lugar fijado por la familia."
    )

    shown = passage(summary, "¿Cuándo es la reserva de la habitacion en Cadiz?")

    assert "viernes 12 a las 18:00" in shown and "boda" not in shown


def test_scripts_without_spaces_match_by_character_pairs() -> None:
    summary = (
        "ケンとユイは週末の予定について長く話した。天気が悪ければ映画に行くことにした。"
        "歯医者の予約は水曜日の午後四時半に決まった。ユイは新しいカメラを買うかどうか迷っている。"
        "来月の旅行の話もしたが、まだ行き先は決まっていない。駅前のカフェで会う約束をした。"
        "ケンは仕事が忙しくて、今週は夜遅くまで残業が続いているらしい。"
        "二人は週末にどの公園を散歩するかも相談したが、雨が降るかもしれないので決めなかった。"
        "ユイの妹が来月結婚するので、お祝いのプレゼントを一緒に探しに行くことになった。"
        "最後にケンは新しい料理の本を買ったと言って、来週の日曜日に何か作ってみるつもりだと話した。"
    )

    shown = passage(summary, "歯医者の予約はいつ？")

    assert "水曜日の午後四時半" in shown and "カメラ" not in shown


def test_gaps_are_marked_and_the_question_is_read_once() -> None:
    asked = Question.of("when is the dentist?")

    shown = passage(DENTIST, asked)

    assert asked.wants == frozenset({"time"}) and "dentist" in asked.terms
    assert GAP in shown  # the title, then the booking further on
