"""List the distinct named entities of a text (context_entity_recall, judge extractor).

The same request is built for the same text, so a reference that equals the joined contexts, or a text
that another sample shares, is extracted once per run.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ascend_eval.prompts.base import PromptSpec

MAX_ENTITIES = 96
"""An upper bound in the schema: it keeps a confused judge from listing entities until max_tokens."""


class EntitiesInput(BaseModel):
    text: str


class Entities(BaseModel):
    entities: list[str] = Field(json_schema_extra={"maxItems": MAX_ENTITIES})


ENTITIES = PromptSpec(
    name="entities",
    version=1,
    instruction={
        "en": (
            "List the named entities that the text mentions: people, organisations, places, landmarks, "
            "works, events, dates, times, quantities and numbers with their units. Write each entity once, "
            "as it appears in the text; when the text refers to one thing in several ways (a full name and "
            "a surname, an abbreviation), keep the most complete form only. Do not list common nouns."
        ),
        "zh": (
            "列出文本中提到的命名实体：人物、机构、地点、地标、作品、事件、日期、时间、数量以及带单位的数字。"
            "每个实体只写一次，按文本中的写法；同一事物在文中有多种说法（全名与简称、缩写）时，只保留最完整的"
            "一种。不要列出普通名词。"
        ),
    },
    input=EntitiesInput,
    output=Entities,
    examples={
        "en": [
            (
                EntitiesInput(
                    text="The Golden Gate Bridge spans the Golden Gate strait in San Francisco. The bridge "
                    "opened in 1937."
                ),
                Entities(entities=["Golden Gate Bridge", "Golden Gate strait", "San Francisco", "1937"]),
            ),
            (
                EntitiesInput(text="The Apollo 11 crew landed on the Moon on 20 July 1969."),
                Entities(entities=["Apollo 11", "Moon", "20 July 1969"]),
            ),
            (
                EntitiesInput(
                    text="Ada Lovelace worked with Charles Babbage on the Analytical Engine. Lovelace "
                    "published her notes in 1843."
                ),
                Entities(entities=["Ada Lovelace", "Charles Babbage", "Analytical Engine", "1843"]),
            ),
            (
                EntitiesInput(
                    text="Mount Kilimanjaro rises 5,895 metres; about 50,000 people climb it a year."
                ),
                Entities(entities=["Mount Kilimanjaro", "5,895 metres", "50,000 people"]),
            ),
        ],
        "zh": [
            (
                EntitiesInput(text="布达拉宫位于拉萨市的红山上，是西藏最著名的建筑之一。"),
                Entities(entities=["布达拉宫", "拉萨市", "红山", "西藏"]),
            ),
            (
                EntitiesInput(text="香港于1997年7月1日回归中国，当天举行了交接仪式。"),
                Entities(entities=["香港", "1997年7月1日", "中国"]),
            ),
            (
                EntitiesInput(text="鲁迅原名周树人，1918年发表了《狂人日记》。周树人生于绍兴。"),
                Entities(entities=["鲁迅", "1918年", "《狂人日记》", "绍兴"]),
            ),
            (
                EntitiesInput(text="三峡大坝坝顶高程185米，总装机容量2250万千瓦。"),
                Entities(entities=["三峡大坝", "185米", "2250万千瓦"]),
            ),
        ],
    },
    max_tokens=1024,
    writes_from=("text",),  # its text always in the request (`PromptSpec.writes_from`)
)
