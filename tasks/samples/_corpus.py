"""Templates and word lists behind the sample conversations (data only, no logic).

A script turn is (speaker code, template). Speaker codes: "u" the namespace's user (or
the delegating agent in a sub-agent session), "u0".."u3" members of a group, "a" the
assistant, "t:<tool>" a tool. Templates are filled with `str.format_map`, so they hold
no literal braces.
"""

from __future__ import annotations

from dataclasses import dataclass

Turn = tuple[str, str]


@dataclass(frozen=True)
class Topic:
    """One scripted conversation: a session takes a prefix of `turns`, then `final`."""

    title: str | None
    turns: tuple[Turn, ...]
    followup: tuple[Turn, ...] = ()
    final: tuple[tuple[Turn, ...], ...] = ()


SLOTS: dict[str, tuple[str, ...]] = {
    "city": ("Lisbon", "Porto", "Vienna", "Kyoto", "Copenhagen", "Valencia", "Edinburgh"),
    "month": ("March", "April", "May", "June", "September", "October"),
    "airline": ("TAP", "Lufthansa", "easyJet", "KLM", "Iberia"),
    "price": ("148", "189", "212", "236", "274"),
    "budget": ("120 EUR", "140 EUR", "160 EUR"),
    "friend": ("Clara", "Sofia", "Lena", "Ines", "Marta"),
    "partner": ("Jonah", "Marc", "Ben"),
    "dentist": ("Okafor", "Brandt", "Lindqvist", "Moreau"),
    "weekday": ("Monday", "Tuesday"),
    "weekday2": ("Wednesday", "Thursday", "Friday"),
    "time": ("08:30", "09:15", "11:00"),
    "distance": ("8", "10", "12", "14"),
    "pace": ("5:31", "5:42", "5:55", "6:04"),
    "weeks": ("5", "6", "8", "9"),
    "date": ("March 14", "May 2", "June 21", "October 9"),
    "date2": ("March 18", "May 6", "June 24", "October 13"),
    "shop": ("Kamerastore", "Foto Koch", "analogue.shop"),
    "url": (
        "https://example.com/shortlist",
        "https://notion.so/atlas/launch-plan",
        "https://github.com/acme/archivist/pull/412",
        "https://grafana.internal/d/api-latency",
    ),
    "migration": ("0007_add_memory_tier", "0009_access_log_index", "0011_queue_attempts"),
    "rows": ("4.2 million", "11 million", "850,000"),
    "colleague": ("Priya", "Dmitri", "Hannah", "Luis"),
    "job": ("integration-tests", "e2e-postgres", "lint-and-types"),
    "service": ("billing-api", "search-gateway", "notifier"),
    "version": ("v2.14.0", "v3.1.2", "v1.9.5"),
    "prev_version": ("v2.13.4", "v3.1.1", "v1.9.3"),
    "envvar": ("PAYMENTS_WEBHOOK_SECRET", "SEARCH_CACHE_URL", "SMTP_RELAY_HOST"),
    "pr": ("412", "418", "431", "457"),
    "product": ("Atlas Go", "Atlas Pro 2", "Atlas Home"),
    "agency": ("Brightline", "Nordwind Studio", "Pixel & Co"),
    "person_ext": ("Karen Holt", "Tomás Rivera", "Ingrid Falk"),
    "supplier": ("PackRight", "Kartonwerk GmbH", "Shenzhen BoxCo"),
    "supplier2": ("EcoPack", "Boxtree", "Verpackt AG"),
    "amount": ("80,000", "95,000", "120,000"),
    "q": ("2", "3", "4"),
}

TEAM = ("Maya", "Jonas", "Priya", "Tom", "Kenji")

ALICE: tuple[Topic, ...] = (
    Topic(
        "Trip to {city}",
        (
            (
                "u",
                "I'm thinking about a long weekend in {city} in {month}. Can you help me plan it?",
            ),
            (
                "a",
                "Of course. For {city} in {month} I'd plan three nights: the old town and the "
                "riverside on day one, a day trip on Saturday, and a slow Sunday with a food "
                "market before the evening flight. Flights first, or places to stay?",
            ),
            ("u", "Flights first. I prefer window seats, and nothing before 8am please."),
            (
                "a",
                "Noted: window seat, no departures before 08:00. {airline} has a 09:40 direct "
                "flight on Friday for about {price} EUR return; the Saturday option is cheaper "
                "but leaves at 06:55.",
            ),
            ("u", "Let's go with the {airline} one on Friday."),
            (
                "a",
                "I've drafted the booking for the 09:40 {airline} flight with a window seat. "
                "Shall I hold it for 24 hours?",
            ),
            ("u", "Yes, hold it. {friend} might join, I'll ask her tonight."),
            (
                "a",
                "Holding until tomorrow 09:00. If {friend} joins I can add the seat next to you.",
            ),
            ("u", "Where should we stay? Something walkable, under {budget} a night."),
            (
                "a",
                "Three options under {budget}: a guesthouse in the old quarter (rated 8.9), an "
                "apartment near the central market, and a boutique hotel by the river that is "
                "a bit over budget on Saturday. Shortlist: {url}",
            ),
            ("u", "The guesthouse looks perfect."),
            (
                "a",
                "Great, the guesthouse is the plan. Still open: whether {friend} comes, which "
                "decides single or double room.",
            ),
        ),
        followup=(
            ("u", "{friend} is in! Can you switch to a double room?"),
            (
                "a",
                "Switched to a double room at the guesthouse and added a window seat for "
                "{friend} on the same {airline} flight. Total is now {price} EUR per person.",
            ),
            ("u", "Perfect, book it."),
        ),
    ),
    Topic(
        "Dentist appointment",
        (
            ("u", "I need to move my appointment with Dr. {dentist}, the one on {weekday}."),
            ("a", "Your appointment with Dr. {dentist} is on {weekday} at {time}. What works?"),
            ("u", "Anything after 4pm next week. Mornings are impossible with work."),
            ("a", "The practice has {weekday2} at 16:30 or Thursday at 17:15."),
            ("u", "{weekday2} at 16:30."),
            (
                "a",
                "Booked: Dr. {dentist}, {weekday2} 16:30. I'll remind you the day before. They "
                "asked whether you still have the sensitivity in the lower left molar.",
            ),
            ("u", "A bit, yes. Mostly with cold drinks."),
            ("a", "I'll add that to the appointment note so Dr. {dentist} can check it."),
            ("u", "Remind me to ask about the whitening cost too."),
            ("a", "Added: ask about the whitening cost. Reminder set for the day before, 18:00."),
        ),
    ),
    Topic(
        "Half marathon training",
        (
            ("u", "Ran {distance} km this morning at {pace} per km."),
            (
                "a",
                "Nice, that's about ten seconds per km faster than last week's average. The "
                "half marathon in {city} is in {weeks} weeks, so you're right on plan.",
            ),
            ("u", "My left knee felt a bit tight after 8 km though."),
            (
                "a",
                "Worth watching. I'd swap Thursday's intervals for an easy 6 km plus ten "
                "minutes of mobility work. If the knee is still tight on Saturday, skip the "
                "long run and we'll book a physio.",
            ),
            ("u", "Ok. I'd rather run in the mornings from now on, evenings are too hot."),
            ("a", "Understood: all runs before 08:00 from now on. Saturday: 16 km easy at 07:00."),
            ("u", "Should I buy new shoes before the race?"),
            (
                "a",
                "Your current pair has about 640 km on it, and most shoes last 600 to 800 km. "
                "If you buy new ones, do it now so you can break them in for three weeks.",
            ),
            ("u", "Let's decide that next week."),
            ("a", "Fine, I'll bring up the shoes again next Monday."),
        ),
        followup=(
            ("u", "Knee update: the easy 6 km felt fine, no pain at all."),
            (
                "a",
                "Good sign. Then Saturday's long run stays, but keep it easy and stop if the "
                "tightness comes back.",
            ),
        ),
    ),
    Topic(
        "Birthday gift for {friend}",
        (
            ("u", "{friend}'s birthday is on {date}. I have no idea what to get her."),
            ("a", "What is she into lately? Last year's ceramics class voucher was a big hit."),
            ("u", "She keeps talking about getting into film photography."),
            (
                "a",
                "Ideas: a refurbished Olympus XA2 (about 120 EUR at {shop}), a photo walk "
                "workshop in {city}, or a developing kit with five rolls of Portra 400.",
            ),
            ("u", "The camera! Can you check if {shop} ships in time?"),
            (
                "a",
                "{shop} ships within 3 to 5 working days, so ordering by Monday is safe. "
                "Gift wrapping?",
            ),
            ("u", "Yes please, and a card that says 'Happy birthday, keep shooting!'"),
            (
                "a",
                "Order drafted: Olympus XA2, two rolls of Portra 400, gift wrap and the card, "
                "{price} EUR in total. Confirm and I'll place it.",
            ),
            ("u", "Confirmed. Don't tell {partner}, he can't keep a secret."),
            ("a", "My lips are sealed. Order placed; tracking will arrive by email."),
        ),
    ),
    Topic(
        "Budget for {month}",
        (
            ("u", "Can we go over my budget for {month}?"),
            (
                "a",
                "So far: rent 1,150 EUR, groceries 312 EUR, transport 89 EUR, eating out 214 "
                "EUR. You're at 78% of the monthly budget with 11 days left.",
            ),
            ("u", "Eating out is way too high again."),
            ("a", "It's 64 EUR above your target of 150. Want alerts at 80% of each category?"),
            ("u", "Yes. And move 200 EUR to savings on the 1st of every month."),
            (
                "a",
                "Done: a standing order of 200 EUR to savings on the 1st, and alerts at 80% "
                "per category. One risk: did the landlord reply about the rent increase?",
            ),
            ("u", "Not yet. I'll call him on Friday."),
            ("a", "I'll remind you on Friday to call the landlord."),
            ("u", "I want to keep the total under 2,400 a month."),
            ("a", "Noted as a goal: total spending under 2,400 EUR per month."),
        ),
        followup=(
            ("u", "Called the landlord: rent goes up by 60 EUR from January."),
            (
                "a",
                "Then the 2,400 EUR goal needs the eating-out target down to 120 EUR. Shall I "
                "adjust the alerts?",
            ),
            ("u", "Yes, adjust them."),
        ),
    ),
)

BOB: tuple[Topic, ...] = (
    Topic(
        "Postgres migration {migration}",
        (
            (
                "u",
                'Migration {migration} fails on staging: column "tier" of relation '
                '"memories" contains null values.',
            ),
            (
                "a",
                "The migration adds the column as NOT NULL without a default on a table that "
                "has rows. Either add it nullable, backfill, then SET NOT NULL, or give it a "
                "server default. On a big table the first avoids a long ACCESS EXCLUSIVE lock.",
            ),
            ("u", "How big is the table on prod?"),
            ("a", "About {rows} rows. A rewrite under lock would block writes for minutes."),
            ("u", "Ok, let's go with nullable plus a batched backfill."),
            (
                "a",
                "Plan: add the column nullable, backfill in batches of 10,000, then SET NOT "
                "NULL in a separate migration. I'll draft {migration} that way.",
            ),
            ("u", "Also the downgrade is broken, it drops the column before the index."),
            ("a", "Right: drop ix_memories_tier first, then the column. Fixing it in the same PR."),
            ("u", "Who reviews migrations this week?"),
            ("a", "{colleague} is on review duty; I'll tag them and mention the backfill timing."),
            ("u", "Open question: do we need a maintenance window for the SET NOT NULL step?"),
            (
                "a",
                "Maybe not: a validated CHECK constraint lets PostgreSQL skip the full scan. "
                "Let's confirm on staging before deciding.",
            ),
        ),
        followup=(
            ("u", "Staging result: SET NOT NULL took 40 ms with the CHECK constraint in place."),
            ("a", "Then no maintenance window is needed. I'll add that to the PR description."),
        ),
    ),
    Topic(
        "Flaky CI job {job}",
        (
            ("u", "The {job} job failed again on main. Third time this week."),
            (
                "a",
                "Last 20 runs of {job}: 4 failures, all test_queue_drain_reclaims_stuck_items, "
                "all 30 s timeouts. Looks flaky rather than a regression.",
            ),
            ("u", "Is it a race?"),
            (
                "a",
                "Likely. The test sleeps one second and expects the reclaimer to have run; on "
                "shared runners the worker sometimes starts late. Polling with a deadline "
                "instead of a fixed sleep would fix it.",
            ),
            ("u", "Let's do that. Should we mark it flaky until then?"),
            ("a", "I'd rather not add a retry marker, it hides real failures. The fix is small."),
            ("u", "Fine, open the PR: {url}"),
            ("a", "PR opened: 'Poll for reclaimed state instead of sleeping'. Green on 5 re-runs."),
            ("u", "This is blocking the release, ping me when it's merged. Urgent."),
            ("a", "Will do. Risk: if it isn't merged by tomorrow noon the release slips a week."),
        ),
    ),
    Topic(
        "Deploy {service} {version}",
        (
            ("u", "Can we deploy {service} {version} to production today?"),
            (
                "a",
                "CI is green and migrations ran on staging. One open item: {envvar} is not set "
                "in the prod secret store yet.",
            ),
            ("u", "Ugh. I'll ask {colleague} to add it."),
            (
                "a",
                "Once it's set I can start a canary at 5% for 30 minutes, then 50%, then 100% "
                "if the error rate stays under 0.5%.",
            ),
            ("u", "Let's do the canary after lunch, around 14:00."),
            ("a", "Scheduled for 14:00. Rollback: redeploy {prev_version} with one command."),
            ("u", "Error rate on the canary?"),
            (
                "a",
                "30 minutes at 5%: error rate 0.12%, p95 latency 180 ms (baseline 175 ms). "
                "Healthy. Proceed to 50%?",
            ),
            ("u", "Go."),
            ("a", "{service} {version} is at 100%. Dashboards: {url}"),
            ("u", "Next time remind me about env vars the day before."),
            ("a", "Got it: I'll check new env vars against the prod secret store a day ahead."),
        ),
    ),
    Topic(
        "Review of PR #{pr}",
        (
            ("u", "Can you review PR #{pr} from {colleague}? It touches the retrieval scoring."),
            (
                "a",
                "Read it. It adds a frequency factor to the score and an index on the access "
                "log. Two concerns: the half-life is hard-coded to 30 instead of read from "
                "settings, and it runs one UPDATE per result row instead of one statement.",
            ),
            ("u", "The per-row update is a problem, we had that before."),
            (
                "a",
                "Yes, with top-k 20 that's 20 round trips per search. I suggested a single "
                "UPDATE with id = ANY(:ids) as a blocking comment.",
            ),
            ("u", "Anything about tests?"),
            ("a", "The empty-namespace case is not covered; I'd ask for one test."),
            ("u", "Approve after those changes. I prefer squash merges for this repo."),
            ("a", "Noted: squash merges here. Changes requested; I'll approve once addressed."),
            ("u", "{colleague} said they'd fix it by Thursday."),
            ("a", "I'll check the PR again on Thursday afternoon."),
        ),
    ),
)

_DONE = "Done. "
_BLOCKED = "Blocked. "

BOB_SUBAGENT: tuple[Topic, ...] = (
    Topic(
        "Fix the failing migration test",
        (
            (
                "u",
                "Run the test suite and fix the failing migration test. Only touch "
                "storage/migrations and tests/storage.",
            ),
            ("a", "Starting with a full run to see the current state."),
            (
                "t:bash",
                "$ pytest -q\nFAILED tests/storage/test_migrations.py::test_roundtrip - "
                'ProgrammingError: index "ix_memories_tier" does not exist\n'
                "1 failed, 211 passed in 48.2s",
            ),
            ("a", "The downgrade drops the column before the index. Reading the migration."),
            (
                "t:read_file",
                "storage/migrations/versions/{migration}.py, lines 40-43:\n"
                'def downgrade() -> None:\n    op.drop_column("memories", "tier")\n'
                '    op.drop_index("ix_memories_tier", table_name="memories")',
            ),
            ("u", "Also run the migration tests twice to make sure it isn't flaky."),
        ),
        final=(
            (
                ("t:edit_file", "storage/migrations/versions/{migration}.py: 2 lines swapped."),
                ("t:bash", "$ pytest -q tests/storage/test_migrations.py\n8 passed in 6.1s (x2)"),
                (
                    "a",
                    _DONE + "Swapped drop_index before drop_column in "
                    "storage/migrations/versions/{migration}.py. tests/storage/test_migrations.py "
                    "passes twice in a row; full suite 212 passed.",
                ),
            ),
            (
                ("t:bash", "$ alembic downgrade -1\nERROR: permission denied for table memories"),
                (
                    "a",
                    _BLOCKED
                    + "The fix in storage/migrations/versions/{migration}.py is ready, but "
                    "the test database role cannot drop indexes. Needs a grant or a different "
                    "role before tests/storage/test_migrations.py can pass.",
                ),
            ),
        ),
    ),
    Topic(
        "Investigate flaky {job}",
        (
            ("u", "Find out why {job} is flaky and propose a fix. Report with file paths."),
            ("a", "Pulling the last 20 runs."),
            (
                "t:gh",
                "$ gh run list --workflow {job} --limit 20\n16 success, 4 failure "
                "(all: tests/flows/test_queue_drain.py::test_reclaims_stuck_items)",
            ),
            ("a", "All four failures are the same test. Reading it."),
            ("t:read_file", "tests/flows/test_queue_drain.py, line 88: time.sleep(1.0)"),
            ("u", "Don't add retries, fix the cause."),
        ),
        final=(
            (
                ("t:edit_file", "tests/flows/test_queue_drain.py: poll with a 10 s deadline."),
                (
                    "a",
                    _DONE + "Replaced the fixed sleep in tests/flows/test_queue_drain.py with a "
                    "poll on the queue state (10 s deadline). 30 local runs green.",
                ),
            ),
            (
                (
                    "a",
                    _BLOCKED
                    + "The race is in flows/queue_drain.py, outside the scope I was given. "
                    "tests/flows/test_queue_drain.py only exposes it. Need approval to change "
                    "the worker start-up.",
                ),
            ),
        ),
    ),
    Topic(
        "Pre-deploy check for {service}",
        (
            ("u", "Check that {service} {version} is ready to deploy: env vars and migrations."),
            (
                "t:bash",
                "$ diff <(env-list prod {service}) deploy/{service}/env.required\n> {envvar}",
            ),
            ("a", "{envvar} is required but missing in prod."),
            ("t:bash", "$ alembic -c deploy/{service}/alembic.ini current\n{migration} (head)"),
            ("u", "Can you add the env var yourself?"),
            ("a", "I don't have write access to the prod secret store."),
        ),
        final=(
            (
                (
                    "a",
                    _BLOCKED + "Migrations are at head ({migration}), but {envvar} is missing "
                    "from the prod secret store (deploy/{service}/env.required). Someone with "
                    "access must add it.",
                ),
            ),
            (
                ("t:bash", "$ env-list prod {service} | grep {envvar}\n{envvar}=***"),
                (
                    "a",
                    _DONE + "{envvar} has been added by ops meanwhile; migrations at head "
                    "({migration}). deploy/{service}/env.required is satisfied.",
                ),
            ),
        ),
    ),
)

ATLAS: tuple[Topic, ...] = (
    Topic(
        "Launch plan for {product}",
        (
            ("u0", "Morning all! {product} launches on {date}. Where are we?"),
            ("u1", "Landing page is done, copy review pending with {person_ext} at {agency}."),
            ("u2", "Pricing page still shows the old tiers. I'll fix it today."),
            ("u0", "And the press release?"),
            ("u3", "Draft is here: {url}. It still needs a quote from the CEO."),
            ("u1", "Can we move the launch to Tuesday? Mondays are bad for press."),
            ("u0", "Agreed. We decided: launch on Tuesday {date2}, 10:00 CET."),
            (
                "a",
                "Summary: launch moved to Tuesday {date2} 10:00 CET; {u2} fixes the pricing "
                "page today; the press release needs the CEO quote. Open: who sends the "
                "newsletter?",
            ),
            ("u2", "I'll send the newsletter, scheduled for 10:30."),
            ("u3", "I'll chase the CEO quote by Thursday."),
            ("u1", "Risk: if {agency} doesn't approve the copy by Friday we ship the old copy."),
            ("u0", "Fine with that risk. Thanks all!"),
        ),
        followup=(
            ("u3", "CEO quote is in the draft now."),
            ("u1", "{agency} approved the copy this morning."),
            ("u0", "Great, then we're on track for {date2}."),
        ),
    ),
    Topic(
        "Supplier delay",
        (
            ("u0", "Bad news: {supplier} says the packaging shipment is two weeks late."),
            ("u1", "Two weeks?! That puts us after the launch."),
            ("u2", "Any stock left from the pilot batch?"),
            ("u0", "About 1,200 units in the {city} warehouse."),
            ("u3", "That covers the first week of pre-orders, maybe ten days."),
            ("u1", "Backup supplier? {supplier2} quoted us last year."),
            ("u2", "They were 18% pricier, but they can deliver in 5 days."),
            (
                "u0",
                "This is urgent. Let's go with {supplier2} for the first 5,000 units and keep "
                "{supplier} for the rest.",
            ),
            (
                "a",
                "Decision noted: {supplier2} for the first 5,000 units, {supplier} for the rest. "
                "Open question: who pays the extra cost?",
            ),
            ("u3", "I'll ask finance tomorrow whether we can claim a penalty from {supplier}."),
            ("u1", "I'll send {supplier2} the signed PO tomorrow morning."),
        ),
    ),
    Topic(
        "Q{q} marketing budget",
        (
            ("u0", "We need to decide the Q{q} marketing budget today."),
            ("u1", "Proposal: {amount} EUR, 60% paid social, 25% events, 15% content."),
            ("u2", "Events feel expensive. The {city} fair cost 18k and brought 40 leads."),
            ("u3", "But three of those leads became our biggest customers."),
            ("u0", "Fair. What if events drop to 15% and content gets the rest?"),
            ("u1", "I prefer keeping one flagship event, the {city} fair."),
            ("u2", "Ok, one event only."),
            (
                "u0",
                "We decided: {amount} EUR, 60% social, 15% events (only the {city} fair), "
                "25% content.",
            ),
            (
                "a",
                "Recorded. Open: who owns the content calendar, and does the board need to "
                "approve anything above 100k?",
            ),
            ("u3", "I'll check with {person_ext} whether the board has to sign off."),
        ),
    ),
)

FOREIGN: dict[str, tuple[Topic, ...]] = {
    "alice": (
        Topic(
            "Viaje a Sevilla",
            (
                ("u", "Hola, quiero organizar un fin de semana en Sevilla con {friend}."),
                (
                    "a",
                    "¡Qué buena idea! Dos noches: el viernes Santa Cruz y el Alcázar, el "
                    "sábado Triana y tapas. ¿Miramos primero el tren o el alojamiento?",
                ),
                ("u", "Primero el tren. Prefiero ir por la mañana, pero no antes de las ocho."),
                ("a", "Hay un AVE desde Madrid a las 08:30 que llega a las 11:05, unos 65 euros."),
                ("u", "Perfecto, vamos con ese."),
                ("a", "Reservado provisionalmente. ¿Busco un piso cerca de la Alameda?"),
                ("u", "Sí, por menos de 120 euros la noche. Mañana te confirmo si viene {friend}."),
                ("a", "De acuerdo, espero tu confirmación antes de reservar."),
            ),
        ),
        Topic(
            "Zahnarzttermin",
            (
                (
                    "u",
                    "Kannst du meinen Termin bei Dr. {dentist} verschieben? Dienstag geht nicht.",
                ),
                ("a", "Klar. Dr. {dentist} hätte Mittwoch um 16:30 oder Freitag um 8:15 frei."),
                ("u", "Mittwoch um 16:30, bitte."),
                ("a", "Erledigt: Mittwoch, 16:30 bei Dr. {dentist}. Ich erinnere dich am Vortag."),
                ("u", "Danke! Frag bitte auch, was eine Zahnreinigung kostet."),
                ("a", "Mache ich. Laut Website der Praxis ({url}) etwa 95 Euro; ich frage nach."),
            ),
        ),
    ),
    "bob": (
        Topic(
            "Deployment von {service}",
            (
                ("u", "Können wir {service} {version} heute noch in Produktion deployen?"),
                (
                    "a",
                    "Fast: CI ist grün, die Migration lief auf Staging. Offen ist nur {envvar}, "
                    "die in Produktion noch fehlt.",
                ),
                ("u", "Ich frage {colleague}, ob er sie heute Nachmittag setzen kann."),
                ("a", "Gut. Danach starte ich den Canary mit 5 % des Traffics für 30 Minuten."),
                ("u", "Wir machen es so: Canary um 15 Uhr, Rollout bis 17 Uhr, sonst Rollback."),
                ("a", "Notiert. Risiko: Ist {envvar} um 15 Uhr nicht gesetzt, verschieben wir."),
                ("u", "Einverstanden."),
            ),
        ),
    ),
    "team-atlas": (
        Topic(
            "ローンチ準備 ({product})",
            (
                (
                    "u0",
                    "おはようございます。{product}のローンチまであと2週間です。進捗はどうですか？",
                ),
                ("u1", "ランディングページは完成しました。{agency}のレビュー待ちです。"),
                ("u2", "価格ページはまだ古いプランのままです。今日中に直します。"),
                ("u0", "プレスリリースはどうなっていますか？"),
                ("u3", "下書きはこちらです：{url}。CEOのコメントが必要です。"),
                ("u0", "では、ローンチは火曜日の10時に決定します。"),
                (
                    "a",
                    "まとめ：ローンチは火曜日10時、価格ページは本日修正。"
                    "ニュースレターの担当は未定です。",
                ),
                ("u2", "ニュースレターは私が送ります。"),
            ),
        ),
    ),
}

QUICK: dict[str, tuple[Topic, ...]] = {
    "alice": (
        Topic(
            None,
            (
                ("u", "What's the weather in {city} tomorrow?"),
                ("a", "Tomorrow in {city}: 14 to 19 °C, light rain after 3pm. Take an umbrella."),
            ),
        ),
        Topic(
            None,
            (
                ("u", "Remind me to water the plants tonight."),
                ("a", "Reminder set for 20:00: water the plants."),
            ),
        ),
    ),
    "bob": (
        Topic(
            None,
            (
                ("u", "psql: how do I list tables in another schema?"),
                ("a", "Use \\dt other_schema.* inside psql."),
            ),
        ),
    ),
    "team-atlas": (
        Topic(
            None,
            (
                ("u0", "Reminder: standup moves to 10:30 tomorrow."),
                ("a", "Noted, calendar invite updated."),
            ),
        ),
    ),
}

BULK_SENTENCES: tuple[str, ...] = (
    "Can you check whether {name} already replied about the {thing} for {day}?",
    "I moved the {thing} review to {day} because {name} is travelling to {city} this week.",
    "The numbers for {thing} look off: we expected {n} items but only saw half of them.",
    "Let's go with the cheaper option for the {thing}; we can revisit it in {n} weeks.",
    "I prefer meetings before noon, so please keep {day} morning free for the {thing}.",
    "{name} promised to send the updated {thing} draft by {day} evening.",
    "There is a risk the {thing} slips if the supplier in {city} misses the deadline again.",
    "Summary so far: the {thing} is on track, {n} open items remain, and {name} owns them.",
    "I'm not sure yet; the open question is who pays for the {thing} in {city}.",
    "Done. I updated the {thing} notes and shared them with {name} and the team.",
    "We decided to postpone the {thing} until {day}, mostly because of the budget.",
    "Quick note: the {thing} dashboard is at https://example.com/{n} if you need it.",
    "This is urgent: the {thing} failed {n} times today and customers in {city} noticed.",
    "Thanks, that helps. I'll follow up with {name} about the {thing} tomorrow.",
)

BULK_WORDS: dict[str, tuple[str, ...]] = {
    "name": ("Ana", "Ben", "Chen", "Dara", "Emil", "Fatima", "Goro", "Hugo", "Iris", "Jana"),
    "thing": (
        "invoice",
        "release",
        "offsite",
        "contract",
        "migration",
        "roadmap",
        "report",
        "hiring plan",
        "dentist visit",
        "flight",
        "newsletter",
        "budget",
    ),
    "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the weekend"),
    "city": ("Berlin", "Madrid", "Osaka", "Nairobi", "Toronto", "Lyon", "Melbourne"),
    "n": ("2", "3", "5", "7", "12", "40", "150"),
}
