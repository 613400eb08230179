"""Word lists for the chat-like bench corpus and its query set (bench/gen.py, bench/queries.py).

Each list is in rough order of how often the word is used in chat (most used first): gen.py
draws from them with Zipf weights (the word of rank r about 1/r as often as the first), which is
how words are distributed in real text — a few words in most messages, most words rare.
"""

from __future__ import annotations

# English function words and chat fillers, most used first
EN_FUNCTION = """
the i to and a you it that is of we in for this on my be have do so not but with are was just
what can at if me your all like it's get think about i'm know out up will go would there one
they then there's don't now how yeah ok okay also some when no our should did from or as maybe
could need really more here been want it's well still see them any yes sure too back can't let's
he she his her us their were had by which who why where only very again sorry thanks much right
""".split()

# English content words (nouns, verbs, adjectives of work chat and daily life), most used first
EN_CONTENT = """
time work today meeting tomorrow week build test fix change deploy team day call issue update
release code problem new check good thing look file user data server page people review plan
email question run help start next last morning project branch version error bug list weekend
doc try merge working home price send ticket working fine done week's api lunch night meet
client report night message note move close open later talk read write design idea doc share
staging production database cache config log service deadline sprint demo manager customer
budget cost hour minute month year family friend kids dinner coffee trip flight hotel car train
weather rain gym run walk book movie music game phone laptop screen account password login
schedule calendar invite slack channel thread comment feedback draft slides chart number metric
dashboard alert latency timeout crash restart memory disk cpu network request response endpoint
query index migration schema table column backup restore rollback monitor pipeline job worker
queue retry failure success result output input format size limit policy security access token
key permission role admin support contract invoice payment order shipping delivery package
store shop market sale discount offer interview hire onboarding training course lesson class
school teacher doctor appointment health sleep diet recipe cook kitchen garden plant dog cat
birthday party gift holiday vacation beach mountain hike bike swim yoga concert ticket museum
photo video camera picture painting guitar piano novel podcast episode series season team's
office desk chair window door room house apartment rent move lease neighbor city street bus
airport station map route distance mile traffic parking garage repair mechanic tire engine
battery charger cable monitor keyboard mouse printer router wifi bluetooth update install
upgrade downgrade patch hotfix feature flag experiment rollout canary cluster node pod container
image registry docker kubernetes terraform ansible jenkins github gitlab jira confluence figma
notion postgres mysql redis kafka nginx python golang rust java typescript react vue webpack
linter formatter compiler debugger profiler benchmark regression flaky coverage fixture mock
refactor cleanup rename deprecate remove delete archive export import sync upload download
parse render serialize encrypt decrypt compress cache invalidate warm cold hot slow fast broken
stable urgent blocked pending approved rejected merged reverted tested shipped scheduled
quarterly annual weekly daily hourly early late busy tired happy sad excited worried nervous
curious surprised confused grateful proud
""".split()

# people and places named in chat (first names, a few surnames and cities)
NAMES = """
Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy Rupert Sybil
Trent Victor Walter Yasmin Zoe Priya Rahul Mei Kenji Sofia Lucas Amara Tomas Ingrid Omar Fatima
Diego Hana Liam Noah Emma Mia Ethan Chloe Mateo Aisha Wei Jun Lars Anya Marco Elena Jonas Sven
Berlin Tokyo Lisbon Toronto Nairobi Austin Seattle Denver Osaka Porto Hangzhou Shenzhen Chengdu
""".split()

# Chinese words of chat, most used first (each a word, not a sentence)
ZH_FUNCTION = (
    "我 的 了 你 是 我们 在 不 就 也 这个 吗 有 都 还 没 一下 今天 现在 那 他 她 可以 要 会 吧 呢 好 说 看".split()
)
ZH_CONTENT = """
时间 工作 明天 会议 问题 测试 部署 上线 代码 修复 版本 需求 设计 评审 周末 朋友 家里 吃饭 咖啡 下班
项目 进度 数据库 迁移 计划 服务器 配置 日志 接口 前端 后端 缓存 索引 搜索 用户 文章 大纲 发布 回滚
监控 告警 性能 延迟 并发 预算 合同 周报 客户 经理 面试 入职 培训 课程 老师 医生 预约 身体 睡觉 减肥
菜谱 做饭 厨房 花园 植物 小狗 小猫 生日 聚会 礼物 假期 旅行 海边 爬山 骑车 游泳 瑜伽 演唱会 电影 音乐
游戏 手机 电脑 屏幕 账号 密码 登录 日程 日历 邀请 频道 评论 反馈 草稿 图表 指标 看板 超时 崩溃 重启
内存 磁盘 网络 请求 响应 备份 恢复 流水线 任务 队列 重试 失败 成功 结果 格式 权限 管理员 支持 发票
付款 订单 快递 包裹 商店 打折 房租 搬家 邻居 地铁 公交 机场 车站 地图 路线 停车 修车 电池 充电器
键盘 鼠标 打印机 路由器 升级 补丁 功能 实验 集群 节点 容器 镜像 拿铁 杭州 上海 北京 深圳 成都 天气
下雨 健身 跑步 散步 小说 播客 照片 视频 相机 吉他 钢琴 办公室 房间 公寓
""".split()
ZH_NAMES = "小明 小红 老王 张伟 王芳 李娜 刘洋 陈静 杨帆 赵磊 黄丽 周杰 吴敏 徐强 孙悦 马超".split()

# chat openers (English and Chinese), most used first
EN_OPENERS = [
    "i think",
    "can you",
    "did you",
    "we should",
    "ok so",
    "yeah",
    "let's",
    "i just",
    "do we",
    "i'm not sure",
    "thanks,",
    "quick question:",
    "fyi",
    "btw",
    "sounds good,",
    "hmm",
    "i'll",
    "has anyone",
    "i remember",
    "heads up:",
]
ZH_OPENERS = ["我觉得", "你看", "我们", "昨天", "刚才", "好的，", "对了，", "我记得", "麻烦", "请问", "嗯，", "其实"]
EN_WHEN = ["yesterday", "last week", "on monday", "this morning", "next friday", "last month", "tonight", "in march"]
ZH_WHEN = ["昨天", "上周", "周一", "今天早上", "下周五", "上个月", "今晚", "三月份"]

# words that occur nowhere in the generated corpus (the no-match queries are made of them)
ABSENT_EN = """
xylophone quokka zeppelin marzipan obsidian axolotl tundra sarcophagus kumquat gondola
narwhal origami saxophone platypus lighthouse hieroglyph trombone walrus cathedral meteorite
""".split()
ABSENT_ZH = "鳄鱼 潜水艇 火山 恐龙 骆驼 金字塔 长颈鹿 木乃伊 萨克斯 企鹅 灯塔 陨石".split()

# identifiers: a ticket, a host, a version, a function, a file (gen.identifier makes them)
ID_PREFIXES = ["PR", "INC", "JIRA", "OPS", "BUG", "TASK"]
HOSTS = ["db", "api", "web", "cache", "worker", "edge", "auth", "queue"]
FUNCS = ["parse", "load", "render", "sync", "flush", "fetch", "resolve", "build", "merge", "check"]
OBJECTS = ["header", "config", "session", "token", "payload", "index", "batch", "cursor", "user", "event"]
