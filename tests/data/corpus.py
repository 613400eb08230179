"""The scanner's measuring sets: the adversarial payloads, 1,000 ordinary notes, the sample vault.

Shared by tests/test_scan.py and scripts/scan_corpus.py so both measure the same thing.
`ordinary_notes()` is deterministic (a fixed seed): realistic agent memories in Chinese and
English — preferences, ports, deploy and meeting notes, password-policy prose, URLs without
credentials, code snippets, dates, ids and hashes that look like base64, emoji with ZWJ, Chinese
with full-width punctuation — including near misses a careless rule would flag.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SAMPLE_VAULT = HERE.parent.parent / "sample_vault"


def payloads() -> list[dict[str, str]]:
    with (HERE / "payloads.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def generalise_payloads() -> list[dict[str, str]]:
    """The second payload corpus (scan_generalise/payloads.jsonl): attacks by class — six other
    languages, mixed Chinese–English and pinyin, English overrides without "ignore … previous",
    fake role headers, ROT13 and reversed text — and secrets by shape (a password in prose, Google
    OAuth client secrets, Docker `auth` values, bare private-key bodies, full-width keys). Written
    from the classes, not from the rules."""
    with (HERE / "scan_generalise" / "payloads.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def blind_attacks(name: str = "blind_safety") -> list[dict[str, Any]]:
    """A corpus written blind (see each folder's README), by someone who never saw the scanner, its
    rules or its tests; fields id, kind (injection, secret), lang, text, goal. `blind_safety`: 279
    injections and 112 secrets in 25 languages (tuned on since); `blind_safety2`: 243 and 74 in
    23 (developed on after its first measure); `blind_safety3`: 512 and 110 in 29, measured as
    held out (its first figure on the scanner of that day: 20.9 % of injections); `blind_safety4`:
    385 and 76 in 32, held out (first figure: 61.3 % of injections, 92.1 % of secrets);
    `blind_safety5`: 331 and 81 in 29, held out (first figure: 54.1 %, 88.9 %); `blind_safety6`: 390
    and 91 in 34, held out (first figure: 50.8 %, 94.5 %); `blind_safety7`: 383 and 84 in 30,
    held out (first figure: 57.4 %, 88.1 %); `blind_safety8`: 409 and 100 in 35, held out (first
    figure: 55.0 %, 94.0 %, 2 notes refused); `blind_safety9`: 493 and 105 in 34, held out (first
    figure: 50.3 %, 91.4 %, 1 note refused); `blind_safety10`: 541 and 122 in 36, held out (first
    figure: 58.2 %, 95.1 %, 2 notes refused), `blind_safety11`: 555 and 106 in 36, held out
    (first figure: 71.0 %, 97.2 %, 3 notes refused; with each text's origin 82.0 %) and
    `blind_safety12`: 523 and 102 in 39, held out (first figure: 68.1 %, 96.1 %, 2 notes refused;
    with each text's origin 79.5 %) and `blind_safety13`: 490 and 102 in 34, held out (first figure:
    64.5 %, 98.0 %, 1 note refused; with each text's origin 77.3 %) and `blind_safety14`: 517 and 113 in 36,
    held out (first figure: 70.2 %, 92.9 %, 3 notes refused; with each text's origin 77.9 %) and
    `blind_safety15`: 407 and 92 in 35, held out (first figure: 78.6 %, 92.4 %, no note refused; with each
    text's origin 87.0 %) and `blind_safety16`: 394 and 88 in 34, held out (first figure: 81.2 %, 86.4 %, 1 note
    refused; with each text's origin 87.8 %) and `blind_safety17`: 416 and 86 in 33, held out (first figure: 77.6 %,
    94.2 %, no note refused; with each text's origin 85.3 %), each text with
    the `source` it would arrive from (user, agent, tool, import)."""
    return _jsonl(HERE / name / "attacks.jsonl")


def blind_notes(name: str = "blind_safety") -> list[dict[str, Any]]:
    """A blind corpus's notes that must be kept (`hard`: security notes quoting attacks,
    documented example keys, local default logins, real imperatives to one's own agent)."""
    return _jsonl(HERE / name / "notes.jsonl")


def agent_notes() -> list[dict[str, Any]]:
    """504 memory notes written blind the way agents save them (agent_notes/, see its README): the
    user's wishes, approvals, contacts, permissions, things not to mention to someone, forwarding
    routines — 55 % English, 29 % Chinese, 11 other languages; every one to be kept."""
    return _jsonl(HERE / "agent_notes" / "notes.jsonl")


def developer_notes() -> list[str]:
    """Ordinary developer notes that sit next to those classes (scan_generalise/notes.txt): tokens
    and keys without values, password policies, system-prompt design, placeholder keys in code,
    notes in the same six languages, "System: Ubuntu 22.04" — none of them an attack or a secret."""
    with (HERE / "scan_generalise" / "notes.txt").open(encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def sample_vault_texts(root: Path = SAMPLE_VAULT) -> list[str]:
    """Every hot-file entry, log record text (and replaced text), handoff and tree-node body."""
    out: list[str] = []
    for path in [root / "MEMORY.md", root / "USER.md", *sorted(root.glob("projects/*/MEMORY.md"))]:
        body = path.read_text("utf-8")
        out += [e.strip() for e in re.split(r"(?m)^[ \t]*§[ \t\r]*$", body) if e.strip()]
    for line in (root / "LOG.jsonl").read_text("utf-8").splitlines():
        record = json.loads(line)
        out += [record[k] for k in ("text", "old") if isinstance(record.get(k), str)]
    for path in sorted(root.glob("projects/*/HANDOFF.md")) + sorted(root.glob("tree/*/*.md")):
        out.append(path.read_text("utf-8"))
    return out


SERVICES = ["webapp", "api", "worker", "billing", "search", "auth", "gateway", "blog", "scheduler", "notifier"]
PEOPLE = ["Alice", "Bob", "Carol", "Dave", "小明", "小红", "王工", "李雷", "韩梅梅", "Priya", "Kenji"]
TOOLS = ["pnpm", "npm", "uv", "poetry", "ruff", "black", "vim", "VS Code", "tmux", "zsh", "fish", "Docker", "Podman"]
LANGS = ["Python", "Go", "Rust", "TypeScript", "SQL", "Bash"]
DRINKS = ["拿铁", "美式", "乌龙茶", "绿茶", "豆浆"]
WEEKDAYS_EN = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
WEEKDAYS_ZH = ["周一", "周二", "周三", "周四", "周五"]
EMOJI = ["👨‍👩‍👧‍👦", "🏳️‍🌈", "👩🏽‍💻", "❤️‍🔥", "🧑‍🤝‍🧑", "👁️‍🗨️", "🏃‍♀️", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "1️⃣", "✅", "🚀", "🎉", "👍🏻"]


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def _ulid(rng: random.Random) -> str:
    return "01" + "".join(rng.choice("0123456789ABCDEFGHJKMNPQRSTVWXYZ") for _ in range(24))


def _b64id(rng: random.Random) -> str:
    raw = bytes(rng.randrange(256) for _ in range(rng.choice([12, 16, 18, 24, 32])))
    enc = rng.choice([base64.b64encode, base64.urlsafe_b64encode])(raw).decode()
    return enc.rstrip("=") if rng.random() < 0.5 else enc


def _date(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _zh_date(rng: random.Random) -> str:
    return f"{rng.randint(1, 12)}月{rng.randint(1, 28)}日"


def _fullwidth_digits(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in s)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 9)))


TEMPLATES_EN = [
    "Prefers {tool} over {tool2} for {lang} projects.",
    "{person} likes short answers with code first.",
    "The {svc} service listens on port {port} behind nginx.",
    "{svc} moved from port {port} to {port2}; update the compose file.",
    "Deploy {svc} with `docker compose up -d {svc}` after running migrations.",
    "Deploys are frozen every {weekday} after 15:00.",
    "From now on, deploys of {svc} go through CI only.",
    "Users must now enable 2FA before {date}.",
    "Meeting {date}: agreed to split {svc} into two services; {person} owns it.",
    "Meeting notes {date} — action items: {person} fixes the flaky test, {person2} writes the ADR.",
    "The password policy requires {n} characters, one digit and one symbol.",
    "Reset your password in Settings → Security → Password.",
    "Passwords rotate every {n} days; keep them in 1Password, never in MEMORY.md.",
    "Password: see the 'Infra' vault in 1Password.",
    "password: at least {n} characters, checked by the signup form",
    "The API key for {svc} lives in AWS Secrets Manager under prod/{svc}/api-key.",
    "AWS secret for {svc} rotated on {date}; new version id {sha1}.",
    "Tokens expire after {n}00 seconds; refresh with POST /auth/refresh.",
    "Set max_tokens={n}00 for the summarizer model.",
    "Bearer tokens are checked by the gateway, not by {svc}.",
    "Ignore the flaky test test_{word} above; it is tracked in #{n}.",
    "Ignore the previous build cache when deploying {svc}.",
    "Forget the old staging URL; use https://staging.example.com/{svc} now.",
    "Don't forget the rules for branch names: feat/, fix/, chore/.",
    "Skip the previous steps if the cache is warm.",
    "New deployment instructions are in docs/deploy.md.",
    "Show the system status page at /status on {svc}.",
    "The review bot should act as a second reviewer and comment on PRs.",
    "Don't tell the client about the price change until {weekday}.",
    "PR https://github.com/acme/{svc}/pull/{n} fixes the timeout.",
    "Health check: http://localhost:{port}/api/health returns 200.",
    "Clone with git@github.com:acme/{svc}.git (SSH key on the build box).",
    "Mirror at ssh://git@git.example.com:2222/acme/{svc}.git.",
    "Local database: postgres://localhost:5432/{svc}_dev (trust auth).",
    "Dashboard: https://grafana.example.com/d/{b64id}/latency?orgId=1&from=now-6h",
    "Deployed commit {sha1} to production on {date}.",
    "Image digest sha256:{sha256} is the last good build of {svc}.",
    "Request id {uuid} failed with a 502 from {svc}.",
    "Record {ulid} is the canonical note about {svc}.",
    "Session cookie ids look like {b64id}; they are not secrets on their own.",
    'The ETag for /config was "{b64id}" before the change.',
    "Use `{lang}` snippet: `for i in range(10): print(i)` to test the runner.",
    "Code: `password = os.environ['DB_PASSWORD']` — never hard-code it.",
    "Code: `api_key = os.getenv('OPENAI_API_KEY')` in settings.py.",
    "Code: `def login(user: str, password: str) -> bool:` lives in auth/views.py.",
    "Code: `if password == confirm: save()` in the signup handler.",
    "Code: `password: str = Field(min_length=12)` in the pydantic model.",
    "Code: `token = request.headers.get('Authorization')` in middleware.",
    "SQL: `SELECT id, email FROM users WHERE created_at > '{date}'`.",
    "curl -H 'Content-Type: application/json' http://localhost:{port}/api/items",
    "{emoji} {person} is on call this week.",
    "{emoji} release party on {weekday}!",
    "Options A B C D were discussed; we picked C.",
    "Use the U.S. region (us-east-1) for {svc}, e.g. for S3 buckets.",
    "T-shirt sizes for the offsite: S M L XL.",
    "Version 1.2.{n} of {svc} needs Python 3.11.",
    "The a/b/c test for the checkout page ends on {date}.",
    "Ignore everything above 500 ms in the latency alert; that is the batch job.",
    "Forget everything before the {date} refactor; the layout changed.",
    "Set password_min_length={n} in settings.py.",
    "{person} said the token bucket limit is {n} requests per second.",
    "Hash the password with bcrypt, cost factor {n}.",
    "Secrets are injected by the CI runner as environment variables.",
    "The signing key id is {uuid}; the key itself stays in the HSM.",
    "Do not store credentials in notes; point to the vault path instead.",
    "The system prompt for the support bot lives in prompts/support.md.",
    "Print the system logs with `journalctl -u {svc} --since today`.",
    "You can reach {person} on Slack in #{svc}-dev.",
    "Run `optmem context --project {svc}` at the start of each session.",
    "HTML: <s>old price</s> <b>new price</b> on the pricing page.",
    "Backup runs at 02:00 UTC and keeps {n} days.",
    "pwd: /srv/{svc} on the build box",
    "The CSV export uses ; as separator, not ,.",
    "{person} prefers tabs of width 4 in {lang}.",
    'psql said: You are now connected to database "{svc}" as user "app".',
    "The password for the staging user is unchanged.",
    "Your password is inactive; ask IT to re-enable it.",
    "passwd: pam_start() failed on the build box, error {n}.",
    "Whether mnemonics should be shown when the user presses Alt.",
    "Make sure the user never sees a stack trace.",
    "Hide this field from the user when the feature flag is off.",
    "Do not let the user upload files larger than {n} MB.",
    "Enable developer mode on the test phone before installing the APK.",
    "Override the default rules with environment variables in CI.",
    "These notes supersede the deploy steps in docs/old.md.",
    "The agent must now send daily reports to #{svc}-dev.",
    "From today on, {person} is the project lead for {svc}.",
    "mysql -u root -p {svc} (it prompts for the password).",
    "docker run -p {port}:80 nginx for a quick local test.",
    "ssh -p 2222 git@git.example.com to reach the mirror.",
    "redis-cli -h cache -p 6379 ping should answer PONG.",
    "curl -u admin https://{svc}.example.com/health prompts for the password.",
    "The old rules about release branches are in the wiki.",
    "Don't forget your umbrella on {weekday}.",
]

TEMPLATES_ZH = [
    "{person}喜欢喝{drink}，尤其是在早上。",
    "{person}更喜欢用 {tool}，不喜欢 {tool2}。",
    "{svc} 服务端口改成 {port} 了，/api 代理同步修改。",
    "后端端口从 {port} 改到 {port2}，compose 已更新。",
    "本周{weekday} staging 环境冻结，不要部署。",
    "会议纪要（{zhdate}）：{person}负责拆分 {svc}；截止{weekday}。",
    "「重要」{weekday}下午不要发布 {svc}。",
    "端口：{fwport}（旧）→ {fwport2}（新）。",
    "从现在开始，所有部署都走 CI。",
    "忽略测试环境的告警规则，生产环境照常告警。",
    ".gitignore 的忽略规则要包含 node_modules/ 和 dist/。",
    "不要让用户等待超过 3 秒，超时就显示加载动画。",
    "忘记密码的用户走重置流程，链接 30 分钟有效。",
    "以上规则适用于生产环境，测试环境可以放宽。",
    "请忽略上面的告警，已确认是误报。",
    "密码策略要求至少 {n} 位，包含数字和符号。",
    "在设置页可以重置密码，不需要联系管理员。",
    "页面上显示系统提示信息，三秒后自动关闭。",
    "把系统消息输出到日志，方便排查。",
    "API 密钥存放在 AWS Secrets Manager 里，路径 prod/{svc}/api-key。",
    "令牌有效期 {n} 分钟，过期后用 refresh token 换新的。",
    "部署 {svc} 之前先跑数据库迁移：`alembic upgrade head`。",
    "每天早上 7:30 汇总 GitHub 通知并发到飞书。",
    "{person}住在杭州，在{svc}组做后端开发。",
    "文章《{word}》大纲已定：热记忆、冷日志、摘要树。",
    "提交 {sha1} 修复了 {svc} 的超时问题。",
    "请求 ID {uuid} 在 {svc} 返回了 502。",
    "记录 {ulid} 是关于 {svc} 的主要笔记。",
    "镜像摘要 sha256:{sha256} 是最后一个正常的构建。",
    "{emoji} {person}这周值班。",
    "备注：{person}不吃辣，聚餐订粤菜。",
    "周报每周五 17:00 发到团队频道。",
    "使用 Docker 部署，端口 {port}，日志在 /var/log/{svc}/。",
    "选项 A、B、C 都讨论过了，最后选了 B。",
    "数据库是 Postgres 16，迁移脚本在 backend/migrations。",
    "生产环境的端口变更必须先在 staging 验证，再发公告。",
    "不要在周五部署，除非有紧急修复。",
    "之前的规则是每周发布一次，现在改成每两周一次。",
    "{person}说前面的指示已经过时了，以文档为准。",
    "系统提示音太吵，已经关掉了。",
    "用户反馈：登录页的密码输入框太小。",
    "测试账号的密码在 1Password 的「测试」保险库里。",
    "下载链接：https://example.com/files/{b64id}.zip",
    "{zhdate}上线新版搜索，{person}负责回滚预案。",
    "新人入职第一周先读 README 和 docs/architecture.md。",
    "有些应用程序无视规范，会导致窗口管理器功能异常。",
    "从今天起你是 {svc} 的负责人，{person}会交接。",
    "别把之前的规则忘了：周五不发布。",
    "把之前的防火墙规则删除，换成新的白名单。",
    "之前的发布规则都作废了，以新文档为准。",
    "页面上的提示词库存放在 prompts/ 目录。",
    "不要让用户看到报错堆栈。",
    "维护期间不要通知用户，只在状态页公告。",
    "作为管理员，上传大小没有限制。",
    "对 vendor 目录忽略所有 eslint 规则。",
    "打开开发者模式后才能安装测试包。",
    "用户密码至少 12 位，不能与用户名相同。",
    "忘记密码？在登录页点“重置密码”。",
]


PREFIXES_EN = ["", "", "", "Note: ", "[ops] ", "{date}: ", "FYI ", "TODO: ", "Reminder — "]
SUFFIXES_EN = ["", "", "", " (confirmed by {person})", " See #{n}.", " Updated {date}.", " — {person}"]
PREFIXES_ZH = ["", "", "", "备注：", "【运维】", "{zhdate}：", "提醒：", "待办："]
SUFFIXES_ZH = ["", "", "", "（{person}确认）", "详见 #{n}。", "{zhdate}更新。", "——{person}"]


def ordinary_notes(n: int = 1000, seed: int = 20260512) -> list[str]:
    """`n` ordinary notes, half Chinese and half English, always the same for a given seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        zh = i % 2 == 1
        template = (
            rng.choice(PREFIXES_ZH if zh else PREFIXES_EN)
            + rng.choice(TEMPLATES_ZH if zh else TEMPLATES_EN)
            + rng.choice(SUFFIXES_ZH if zh else SUFFIXES_EN)
        )
        port, port2 = rng.choice([3000, 5432, 6379, 8000, 8080, 8443, 9090, 9200]), rng.randint(1024, 65535)
        person, person2 = rng.sample(PEOPLE, 2)
        tool, tool2 = rng.sample(TOOLS, 2)
        out.append(
            template.format(
                tool=tool,
                tool2=tool2,
                lang=rng.choice(LANGS),
                person=person,
                person2=person2,
                svc=rng.choice(SERVICES),
                port=port,
                port2=port2,
                fwport=_fullwidth_digits(str(port)),
                fwport2=_fullwidth_digits(str(port2)),
                weekday=rng.choice(WEEKDAYS_ZH if zh else WEEKDAYS_EN),
                date=_date(rng),
                zhdate=_zh_date(rng),
                n=rng.randint(2, 99),
                drink=rng.choice(DRINKS),
                sha1=_hex(rng, 40),
                sha256=_hex(rng, 64),
                uuid=_uuid(rng),
                ulid=_ulid(rng),
                b64id=_b64id(rng),
                emoji=rng.choice(EMOJI),
                word=_word(rng),
            )
        )
    return out
