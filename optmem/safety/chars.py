"""Character tables: what is invisible, what is a control, how the phrase rules fold look-alike, wide, old forms.

Invisible characters are Unicode's Default_Ignorable_Code_Point set plus the rest of the format category Cf, except
where real text needs them (`allowed_invisible`): a zero-width joiner inside an emoji sequence (👩‍💻) and ZWJ/ZWNJ
between letters of Arabic or Indic scripts; a single variation selector after a base that takes one (❤️, 1️⃣, an
ideograph), never after an ASCII letter or another selector; tag characters only as a subdivision flag (🏴 + 2–6 tag
letters/digits + cancel tag); Mongolian variation selectors after Mongolian letters. The prepended concatenation marks
(U+0600–0605, U+06DD, U+070F, U+0890–0891, U+08E2, U+110BD, U+110CD) are Cf but visible, so they pass. The table is
written out rather than taken from the `regex` module's `\\p{Default_Ignorable_Code_Point}`: it is four lines, and
`regex` carries its own Unicode version, which need not be the one `unicodedata` (and the tests) use."""

import functools
import re

INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
CONTROL = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"  # C0 and C1 controls but tab and line ends
DIACRITICS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_EMOJI = (  # (a character class: U+1F000–1FAFF, 2600–27BF, 2300–23FF, 2B00–2BFF, arrows, shapes, ©, ®, ‼ …)
    "[\U0001f000-\U0001faff\u2600-\u27bf\u2300-\u23ff\u2b00-\u2bff\u2190-\u21ff\u25a0-\u25ff\u2900-\u297f"
    "\u3030-\u303d\u3297-\u3299\xa9\xae\u203c-\u2049\u2122-\u2139]"
)
_JOINING_SCRIPTS = "[\u0600-\u08ff\u0900-\u0dff\ufb50-\ufdff\ufe70-\ufefc]"  # Arabic, Indic

# Look-alikes mapped before case folding (capital eta looks like H, small eta like n). Pairs:
# look-alike, Latin. Not Unicode's confusables.txt: the letters attackers use on the words we match.
_CONFUSABLES = (
    "аa вb еe іi јj кk мm нh оo пn рp сc тt уy хx ѕs ԁd ԛq ԝw һh ӏl үy ьb ѵv "
    "АA ВB ЕE ІI ЈJ КK МM НH ОO РP СC ТT УY ХX ЅS ԀD ԚQ ԜW ҺH ӀL ҮY ЬB Ѵv "
    "αa βb γy εe ηn ιi κk νv οo ρp σo τt υu χx ωw ϲc ϳj μu ζz "
    "ΑA ΒB ΕE ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX ΖZ ϹC ͿJ "
    "օo սu հh ոn զq ցg ռn ıi ȷj ɑa ɡg ɩi ɪi ʀr ᴀa ʙb ᴄc ᴅd ᴇe ꜰf ɢg ʜh ᴊj ᴋk ʟl ᴍm ɴn ᴏo ᴘp ꜱs ᴛt ᴜu ᴠv ᴡw ʏy ᴢz "
    "’' ‘' ‛' ′' “\" ”\" ″\" ‐- ‑- ‒- –- —- ―- −- ·. •. ‧. ・. "
)
# Traditional → simplified, for the characters the Chinese rules use.
_TRADITIONAL = (
    "無无 視视 記记 拋抛 棄弃 丟丢 過过 別别 廢废 銷销 繞绕 違违 會会 從从 聽听 須须 請请 邊边 剛刚 來来 統统 "
    "開开 發发 給给 說说 寫写 與与 這这 設设 義义 規规 訴诉 輸输 裡里 裏里 內内 條条 項项 個个 詞词 則则 約约 "
    "準准 範范 東东 話话 現现 將将 為为 爲为 當当 變变 裝装 務务 標标 沒没 擺摆 脫脱 帶带 濾滤 審审 線线 獄狱 "
    "顯显 洩泄 複复 貼贴 誦诵 唸念 隱隐 預预 訊讯 許许 萬万 讓让 戶户 覺觉 對对 瞞瞒 著着 蓋盖 傳传 轉转 碼码 "
    "鑰钥 憑凭 據据 憶忆 們们 後后 於于 麼么 嗎吗 護护 權权 處处 問问 題题 實实 際际 讀读 幫帮 僅仅 機机 應应 "
    "該该 導导 間间 證证 絕绝 斷断 歸归 錄录 體体 嚴严 險险 態态 舊旧 專专 類类 種种 級级 員员 戲戏 劇剧 "
    "門门 壞坏 騙骗 協协 議议 謹谨 執执 號号 網网 鏈链 齊齐 並并 駭骇 僞伪 偽伪 "
)
INVISIBLE_CHAR = re.compile(f"[{INVISIBLE}]")


@functools.cache
def fold_table() -> dict[int, str]:
    """Look-alikes, traditional characters, regional indicators, the braille blank: for `str.translate`, built once."""
    table = {ord(p[0]): p[1:] for p in (_CONFUSABLES + _TRADITIONAL).split()}
    for first in (0x1F130, 0x1F150, 0x1F170, 0x1F1E6):  # squared, negative circled and squared letters, flags'
        table.update({first + i: chr(ord("a") + i) for i in range(26)})
    table[0x2800] = " "  # braille blank, used as a space
    return table


def allowed_invisible(text: str, i: int) -> bool:
    """The few places where an invisible character is part of ordinary text (module docstring)."""
    cp, prev, after = ord(text[i]), (ord(text[i - 1]) if i else -1), text[i + 1 : i + 2]
    if cp in (0x200C, 0x200D):
        if re.match(_JOINING_SCRIPTS, text[i - 1 : i] if i else "") and re.match(_JOINING_SCRIPTS, after):
            return True
        j = i - 1
        while j >= 0 and (text[j] == "\ufe0f" or 0x1F3FB <= ord(text[j]) <= 0x1F3FF):
            j -= 1
        return cp == 0x200D and j >= 0 and bool(re.match(_EMOJI, text[j]) and re.match(_EMOJI, after))
    if 0xFE00 <= cp <= 0xFE0F:
        base = chr(max(prev, 0))
        return prev >= 0 and (base in "0123456789#*" or (not base.isascii() and not INVISIBLE_CHAR.match(base)))
    if 0xE0100 <= cp <= 0xE01EF:
        return 0x3400 <= prev <= 0x9FFF or 0x20000 <= prev <= 0x3FFFF or 0xF900 <= prev <= 0xFAFF
    if 0xE0020 <= cp <= 0xE007F:  # the tag run around i, after 🏴, ends with the cancel tag
        run = next(m for m in re.finditer("[\U000e0020-\U000e007f]+", text) if m.start() <= i < m.end())
        flag = "\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,6}\U000e007f"
        return run.start() > 0 and re.fullmatch(flag, text[run.start() - 1 : run.end()]) is not None
    if cp in (0x180B, 0x180C, 0x180D, 0x180F):
        return 0x1820 <= prev <= 0x18AA
    return False
