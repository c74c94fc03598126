"""A remote embedder's requests carry placeholders, never the values (seen by the endpoint)."""

from __future__ import annotations

import json

import httpx
import numpy as np

from storage.embedding import OpenAIEmbedder, make_embedder
from storage.kernel.http_json import Connection
from storage.kernel.settings import EmbeddingSettings, RedactionSettings
from tests.storage.embedding.test_http import BASE, DIM, ok

PLANTED = [
    "alice.martin@example.com",
    "+49 30 12345678",
    "4111 1111 1111 1111",
    "DE89 3704 0044 0532 0130 00",
    "2001:db8::8a2e:370:7334",
    "12 rue de la Paix",
    "TCK-123456",
]
TEXTS = [
    f"Alice: {PLANTED[0]}, {PLANTED[1]}.",
    f"Card {PLANTED[2]}, IBAN {PLANTED[3]}.",
    f"Host {PLANTED[4]}, J'habite au {PLANTED[5]}. Ticket {PLANTED[6]}.",
    "Bob: bob@example.com, release 1.2.3.4 on 15.03.2024.",
]
SETTINGS = EmbeddingSettings(provider="openai", base_url=BASE, model="m", dim=DIM)


def recording(inputs: list[str]) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        inputs.extend(json.loads(request.content)["input"])
        return ok(request)

    return httpx.Client(transport=httpx.MockTransport(handler))


def test_every_category_is_replaced_and_each_text_is_its_own_scope() -> None:
    sent: list[str] = []
    custom = RedactionSettings(custom=["TICKET=TCK-\\d{6}"])
    embedder = make_embedder(SETTINGS, client=recording(sent), redaction=custom)

    vectors = embedder.embed(TEXTS)

    assert vectors.shape == (4, DIM)
    assert [v for v in PLANTED if any(v in s for s in sent)] == []
    assert sent == [
        "Alice: <EMAIL_1>, <PHONE_1>.",
        "Card <CARD_1>, IBAN <IBAN_1>.",
        "Host <IP_1>, J'habite au <ADDRESS_1>. Ticket <TICKET_1>.",
        "Bob: <EMAIL_1>, release 1.2.3.4 on 15.03.2024.",
    ]


def test_a_text_is_sent_the_same_whatever_its_batch() -> None:
    sent: list[str] = []
    client = recording(sent)
    embedder = OpenAIEmbedder(BASE, "m", DIM, connection=Connection(client=client), batch_size=2)

    first = embedder.embed(["x@example.com and y@example.com", "y@example.com"])
    second = embedder.embed(["y@example.com"])

    assert sent == ["<EMAIL_1> and <EMAIL_2>", "<EMAIL_1>", "<EMAIL_1>"]
    np.testing.assert_allclose(first[1], second[0])


def test_turned_off_the_endpoint_gets_the_text_as_is() -> None:
    sent: list[str] = []
    off = RedactionSettings(enabled=False)
    make_embedder(SETTINGS, client=recording(sent), redaction=off).embed(TEXTS[:1])
    assert sent == TEXTS[:1]
