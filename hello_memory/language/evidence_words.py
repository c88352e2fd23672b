"""Words that are no evidence of what a question is about: time words and question or stop words.

The relevance floor weighs the words a question shares with a memory
(:func:`hello_memory.core.relevance.evidence_text`). Some words say *when* or *how* something is
asked, not *what* about: "any news this **morning**?" shares "morning" with "Volunteered at the food
bank on Saturday morning", "what **time** is it **now**?" shares "time" with "Tried rock climbing for
the first time", "今天**星期**几？" shares 星期 with a note about Tuesday. Before issue 35 each of those
shared words was enough for a memory to clear the floor. Lexical ranking (BM25) keeps them: a memory
that says "last weekend" is found by a question that does; only the floor's evidence leaves them out.

The lists are closed and hand-written, English and Chinese; English words are compared stemmed, as
:func:`~hello_memory.language.text.lexical_tokens` makes them. Content words stay even when they are
common ("work", "home", "money"): they can be what a question is about.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

TIME_EN = """
time times now today tonight tomorrow yesterday morning mornings afternoon afternoons evening evenings
night nights noon midnight week weeks weekend weekends weekday weekdays month months year years day days
hour hours minute minutes date dates moment recent recently lately late latest currently current soon ago
last next past earlier later early o'clock am pm monday tuesday wednesday thursday friday saturday sunday
mondays tuesdays wednesdays thursdays fridays saturdays sundays january february march april may june july
august september october november december spring summer autumn fall winter season daily weekly monthly
yearly annual sunrise sunset
"""
STOP_EN = """
any anything anyone anybody how much many can could would should shall might must there here about
some something someone get gets got getting like just also very really ever still all more most other
please tell know let us what's who's where's when's how's why's it's that's there's here's i'm i've i'd
i'll you're you've don't doesn't didn't can't won't isn't aren't wasn't weren't not no yes up out over
again been being am which whose while yours mine myself happen happens happened happening going go goes
went come comes coming new doing done make makes made thing things right way well one
"""
TIME_ZH = """
今天 明天 昨天 前天 后天 大后天 现在 刚才 刚刚 早上 早晨 上午 中午 下午 晚上 傍晚 今晚 昨晚 明晚 今早 夜里 半夜 凌晨
周末 星期 礼拜 本周 这周 上周 下周 今年 去年 明年 前年 几点 点钟 时候 时间 最近 近来 目前 将来 以前 之前 以后 之后
几号 日期 每天 每周 每月 每年 月份 年份 周一 周二 周三 周四 周五 周六 周日 周天 星期一 星期二 星期三 星期四 星期五
星期六 星期日 星期天 这个月 上个月 下个月 本月 春天 夏天 秋天 冬天 当前 刚好 日出 日落
"""
STOP_ZH = """
什么 怎么 怎样 怎么样 哪里 哪儿 哪个 哪些 哪 谁 吗 呢 吧 多少 几 有 没有 是不是 有没有 一下 可以 能 会 要 想 请
告诉 一个 一些 个 为什么 如何 多 还 又 再 被 把 给 让 对 从 到 向 跟 为 很 太 最 更 没 不 上 下 里 中 过 着 啦
呀 哦 嘛 么 得 地 所以 因为 如果 就是 还是 或者 已经 正在 一直 知道 觉得 一般 发生 情况 这个 那个 这些 那些
我的 你的 他的 她的 我们 你们 他们 自己 东西 事情
"""


@cache
def _non_evidence() -> frozenset[str]:
    from hello_memory.language.text import lexical_tokens

    english = (TIME_EN + STOP_EN).split()
    # as lexical_tokens makes them (stemmed: "mornings" -> "morn"), and as written
    stems = {t for word in english for t in lexical_tokens(word)}
    return frozenset(stems | set(english) | set((TIME_ZH + STOP_ZH).split()))


def is_evidence(token: str) -> bool:
    """True when ``token`` (a lexical token) can say what a question is about.

    Example:
        >>> [t for t in ["news", "morn", "now", "上司", "星期", "几"] if is_evidence(t)]
        ['news', '上司']
    """
    return token not in _non_evidence()


def evidence_terms(tokens: Iterable[str]) -> list[str]:
    """``tokens`` without those that are no evidence (:func:`is_evidence`), in order.

    Example:
        >>> evidence_terms(["ani", "news", "morn"])
        ['news']
    """
    return [t for t in tokens if is_evidence(t)]
