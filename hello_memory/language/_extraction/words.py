"""Word lists for the rule-based extractor (:mod:`hello_memory._extraction_rules`)."""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Function words, frequent verbs/adverbs/adjectives and chat fillers: never an entity on their own,
# and they end a noun phrase. A capitalised one at a sentence start is not a name either.
EN_STOP = _words(
    """a about above after again against ago all almost along already also although always am among an and
    another any anyone anything anyway are around as at away back be became because become been before
    being below best better between both but by can cannot could did do does doing done down during each
    either else enough even ever every everyone everything far few for from further get gets getting got
    gotten had has have having he her here hers herself him himself his how however i if in indeed instead
    into is it its itself just last least less let like likely lot lots made make makes making many may
    maybe me might mine more most much must my myself near need needs neither never next no nobody none
    nor not nothing now of off often oh ok okay on once one only onto or other others otherwise our ours
    out over own perhaps please pretty quite rather really right said same say says saying see seem seemed
    seems seen she should since so some somebody someone something sometimes somewhat soon still such sure
    than thank thanks that the their theirs them themselves then there these they thing things think
    thinking this those though through thus to today together tomorrow tonight too toward towards under
    until up upon us very via was way we well went were what whatever when where whether which while who
    whom whose why will with within without would yeah yes yesterday yet you your yours yourself
    yourselves hey hi hello wow cool great good nice awesome amazing glad happy sorry lovely beautiful
    wonderful fantastic totally definitely absolutely actually probably especially recently finally
    week weeks weekend month months year years day days morning evening night time times moment while
    went going gone come came coming take took taking taken give gave giving want wanted wants wanting
    feel feeling felt know knew knowing known look looking looked looks tell told telling keep kept
    try tried trying find found finding help helped helping start started starting talk talked talking
    also stuff kind sort bit couple cause sounds sound great able super much else whole little big
    given putting gonna wanna gotta kinda stoked someday anything lol omg get let put say saw see use
    ask way bad old hot yay ugh guess mean means meant hope hoped glad fun lucky
    """
)
DETERMINERS = _words(
    "a an the my his her their our your its some this that these those one two three four five six "
    "seven eight nine ten several many few lots lot of new own"
)
# A lower-case word right after one of these is a verb, not a concept ("to capture", "I'm putting").
VERB_CUES = _words(
    "to gonna wanna gotta i we you they he she will can could would should must might did do does don't "
    "didn't doesn't can't won't i'm we're you're they're i'll we'll i've we've am are is was were been be "
    "let's really just also never always even actually still finally"
)
# After these an "-ing" word names an activity ("went camping", "the painting", "love of cooking").
ING_CUES = DETERMINERS | _words("went go goes going gone about of for in at with from into enjoy enjoys")
# Words between a subject and a "like"/"love" trigger that turn it into something else
# ("would like", "looks like", "feel like").
EN_BLOCK_GAP = _words(
    "would could should d look looks looked seem seems seemed sound sounds sounded feel feels felt "
    "not never if"
)
# Labels that are not chat speakers ("Note: ...").
LABELS = _words(
    "note notes update reminder todo summary question answer q a tip warning important fact facts "
    "assistant system bot ai user me i 备注 提醒 问题 回答 总结 助手 系统 注意 用户 我"
)
NAME_LINKS = _words("of de la du del van von der")
ORG_WORDS = _words(
    "corp corp. corporation inc inc. ltd llc co company group university college school academy "
    "bank institute hospital foundation club team church center centre museum agency studio studios "
    "labs lab association society council ministry department"
)
PLACE_CUES = _words("in to from near visited visit visiting toward towards")
CALENDAR = _words(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june "
    "july august september october november december"
)
LY_NOUNS = _words("family supply reply assembly ally belly bully butterfly jelly rally italy")
PLURAL_KEEP = _words(
    "news series species lens bus gas canvas yes this its always sometimes perhaps chaos "
    "physics mathematics economics politics athletics gymnastics glasses clothes"
)
ZH_STOP_NOUNS = _words(
    "时候 东西 事情 事儿 时间 问题 地方 方面 感觉 样子 情况 今天 明天 昨天 现在 以后 之前 一下 有点 "
    "大家 自己 别人 人家 什么 怎么 这样 那样 一些 有些 部分 其他 其它 关系 意思 办法"
)
# One-character verbs jieba glues to a following noun in its dictionary ("喝咖啡", "打篮球").
ZH_VERB_PREFIX = frozenset("喝吃打看听玩养读学弹拉踢做买开用穿戴写画唱跳逛爬骑")
# Common Chinese surnames: a jieba "nr" word not starting with one (and not 小/老/阿) is rarely a name.
SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任"
    "沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔"
    "向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌"
    "毕单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦"
    "麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师和仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩"
    "明佘池查麻苑迟邝小老阿"
)
