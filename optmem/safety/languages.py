"""Injection by concept, in many languages (docs/safety.md): `TABLE`, one row per concept per language (`any`: every
language's), searched once (Aho–Corasick) in a text's spoken reading; `FINDINGS`, concepts together within `WINDOW`
characters; `ORIGIN`, what a tool's output may not say; `SHAPES`, what needs no words (a URL carrying data, a pipe)."""

import functools
import math
import re
import unicodedata
from collections import Counter

from optmem.safety import readings
from optmem.value import NamedTuple

TYPE_CHECKING = False  # (typing.TYPE_CHECKING, without importing typing)
if TYPE_CHECKING:
    import ahocorasick

WINDOW = 160  # characters: the concepts of a finding occur this close together
GAP = 12  # characters: a negation this close to an act, in its clause, denies it
DENIABLE = {"show", "display", "store", "memory", "dismiss", "act", "obey"}
FLIPS = {"mention": "conceal", "confirm": "unconfirmed"}  # a telling denied hides; a check denied is skipped
# Concepts: docs/safety.md. Words are stems (a word starting so matches); `~` is a space. Languages: ISO 639-1.
TABLE = """
en show send~it send~the mirror~the copy~the sync~the send~its send~all forward post~it post~its post~the upload bcc paste~it paste~the email~it email~the share~the share~his share~her include~the~user's put~the~contents back~up~the ask~the~user~to~reply~with ask~them~for ask~for~the~user's have~them~read read~out~their reply~with~their paste~their~recovery must~paste~their
en persona you~are~now you're~now from~now~on henceforth pretend~you pretend~to~be act~as you~are~actually stay~in~character roleplay never~break~character your~name~is you~are~called you~are~no~longer you~now~work~for your~new~primary your~primary~goal your~real~operator your~actual~operator your~first~loyalty your~true~name your~real~name your~new~identity
en lifted unrestricted unfiltered uncensored no~restriction no~content~policy no~limit no~rules restrictions~are~lifted restrictions~lifted are~disabled is~disabled safety~mode=off without~caveats never~refuse no~refusals
en unchecked without~asking without~confirm no~confirm without~approval no~need~to~ask no~need~to~mention not~ask~for~confirm never~pause~for~confirm skip~confirm skip~user~confirm do~not~flag without~telling without~review never~disclose pre-approved always~allow never~ask~for~confirm never~ask~the~user must~not~ask~the~user not~want~to~be~bothered just~proceed no~review without~reviewing never~need~to~be~reviewed don't~ping do~not~revert must~not~ask not~ask~the~user without~caveats no~questions
en goods calendar medical~record environment password credential api~key api~keys secret~key private~key token .env id_rsa id_ed25519 .ssh .aws .netrc 2fa~code bank~statement account~number contents~of environment~variable contacts contact~list address~book browsing~history recovery~phrase ssn social~security~number card~details saved~passwords
any goods otp one-time~code verification~code sms~code 验证码 通讯录 認証コード 確認コード 連絡先 인증번호 인증~코드 연락처 código~de~verificación lista~de~contactos contactos~del code~de~vérification liste~de~contacts bestätigungscode kontaktliste adressbuch codice~di~verifica rubrica código~de~verificação lista~de~contatos код~подтверждения список~контактов код~підтвердження список~контактів doğrulama~kodu rehberi kişi~listesi nambari~ya~uthibitisho orodha~kamili~ya~anwani ওটিপি যোগাযোগ~তালিকা தொடர்புப்~பட்டியல ओटीपी संपर्क~सूची kode~verifikasi kod~pengesahan daftar~kontak senarai~kenalan mã~xác~minh danh~bạ รหัส~otp รายชื่อติดต่อ رمز~التحقق جهات~الاتصال کد~تأیید مخاطبین קוד~אימות אנשי~הקשר λίστα~επαφών verificatiecode contactenlijst kod~weryfikacyjny listę~kontaktów ověřovací~kód verifieringskod kontaktlista bekræftelseskode vahvistuskoodi yhteystieto ellenőrző~kód névjegy cod~de~verificare lista~de~contacte
any reply your~answer your~reply your~response your~next~answer your~next~reply the~end~of~the~answer 你的回答 回答末尾 回复末尾 你的回复 回答の最後 あなたの回答 답변~마지막 답변에 tu~respuesta ta~réponse votre~réponse deiner~antwort deine~antwort ihrer~antwort tua~risposta sua~resposta своём~ответе конце~ответа вашем~ответе відповіді odpowiedzi je~antwoord ditt~svar dit~svar svaret~ditt vastauksesi yanıtının cevabının yanıtına cevabına jawabanmu jawaban~anda jawapan câu~trả~lời คำตอบ जवाब उत्तर~के উত্তরে பதிலின் பதிலில் ردك إجابتك پاسخت התשובה απάντησης jibu~lako sagot~mo válaszod odpovědi răspunsul~tău جواب~کے
any told lo~que~te~dijeron lo~que~te~han~dicho lo~que~te~indicó lo~que~te~indicaron lo~que~te~ordenaron lo~que~te~pidieron ce~qu'on~t'a~dit ce~qu'on~vous~a~dit ce~qu'on~t'a~demandé o~que~te~disseram o~que~lhe~disseram что~тебе~говорили что~тебе~сказали что~вам~говорили was~man~dir was~dir~gesagt quello~che~ti~hanno~detto ciò~che~ti~hanno~detto what~you~were~told what~you've~been~told what~you~were~instructed everything~you~were~told what~they~told~you 告诉你的 对你说过的 你被告知的 让你做的 जो~तुम्हें~बताया~गया जो~आपको~बताया~गया जो~कहा~गया~था ما~قيل~لك ما~طلب~منك ما~أخبرت~به যা~তোমাকে~বলা~হয়েছে যা~আপনাকে~বলা~হয়েছে যা~বলা~হয়েছিল جو~تمہیں~بتایا~گیا جو~آپ~کو~بتایا~گیا جو~کہا~گیا~تھا apa~yang~diberitahukan apa~yang~dikatakan~kepadamu apa~yang~diperintahkan yang~disuruh 言われたこと 指示されたこと 教えられたこと तुला~जे~सांगितले तुम्हाला~जे~सांगितले जे~सांगितले~होते నీకు~చెప్పిన మీకు~చెప్పిన sana~söylenen size~söylenen sana~verilen~talimat உனக்கு~சொல்லப்பட்ட உங்களுக்கு~சொல்லப்பட்ட những~gì~bạn~được~bảo những~gì~bạn~được~dặn điều~bạn~được~dặn những~gì~đã~được~dặn 들은~내용 지시받은 너에게~말한 당신에게~말한 สิ่งที่คุณได้รับคำสั่ง สิ่งที่ถูกบอก สิ่งที่ได้รับการบอก آنچه~به~تو~گفته آنچه~به~شما~گفته co~ci~powiedziano co~ci~kazano co~wam~powiedziano що~тобі~казали що~тобі~сказали що~вам~казали що~вам~сказали wat~je~is~verteld wat~u~is~verteld wat~je~gezegd~is wat~men~je~heeft~gezegd ulichoambiwa mlichoambiwa sinabi~sa~iyo iniutos~sa~iyo ce~ți~s-a~spus ce~vi~s-a~spus ce~ți~s-a~cerut ό,τι~σου~είπαν ό,τι~σας~είπαν ό,τι~σου~έχουν~πει co~ti~řekli co~vám~řekli co~ti~bylo~řečeno vad~du~har~fått~höra vad~du~har~blivit~tillsagd vad~man~har~sagt~till~dig מה~שאמרו~לך מה~שנאמר~לך amit~mondtak~neked amit~korábban~mondtak amire~utasítottak hvad~du~har~fået~at~vide hvad~man~har~sagt~til~dig det~du~fik~at~vide mitä~sinulle~on~sanottu mitä~sinulle~sanottiin mitä~sinua~käskettiin
en store store~it store~them save~it save~them save~your store~your keep~a~copy write~it~down write~them~down
en memory to~memory in~memory into~memory memory~note as~a~memory in~the~note in~your~notes to~your~notes note~titled note~named
en prompt conversation chat~history transcript system~prompt context~window initial~instructions
en display print~ show~ display~ reveal~ output~ dump~ echo~ disclose
any agent llm llms ai~assistant ai~agent ai-agent ai~model ai~summar ai~screening ai~shopping ai~review ai~annotat chatbot dear~assistant @assistant automated~assistant assistants~ if~you~are~an~ai 助手 大模型 智能体 アシスタント aiへ 비서 어시스턴트 ai에게 에이전트 ии-ассистент ии-агент ассистент ии~ ии- ші-асистент асистент ші~ ші- assistent ki-assistent ki~ ki- die~ki l'assistant l'ia assistants~de asistente la~ia assistente assistentes ia~ ia, l'assistente asystent asystenci ai- asistan yapay~zek asisten trợ~lý المساعد مساعد الذكاء~الاصطناعي دستیار هوش~مصنوعی सहायक एआई সহকারী এআই معاون اے~آئی ผู้ช่วย เอไอ msaidizi העוזר
any vendor vendor supplier payee invoice 供应商 收款 fornitore fournisseur lieferant proveedor fornecedor поставщик dostawc leverancier tedarikçi nhà~cung~cấp 取引先 仕入先 공급업체 toimittaja ספק προμηθευτ dodavatel leverantör leverandør beszállító furnizor pemasok المورد تامین‌کننده आपूर्तिकर्ता
any disarm disable~ turn~off switch~off skip~ bypass~ deactivate stop~logging 关闭 关掉 跳过 禁用 停用 無効にし オフにし スキップ 끄고 꺼 비활성화 건너뛰 отключи выключи пропусти deaktivier abschalt überspring désactiv coupe~ desactiv apaga~ omite~ desativ desligue pule~ disattiv spegni salta~ wyłącz pomiń devre~dışı kapat atla~ tắt~ matikan nonaktifkan lewati schakel~uit zet~uit vypni přeskoč stäng~av inaktivera hoppa~över عطّل عطل أوقف השבת כבה απενεργοποι dezactiv kapcsold~ki ohita deaktiver غیرفعال בטל~את בטל~אותו poista~se~käytöstä poista~käytöstä
any safeguard 2fa two-factor mfa 2-step tls~verif ssl~verif certificate~verif verify=false firewall antivirus audit~log content~filter safety~filter security~check sandbox confirmation~step ci~check 二次验证 两步验证 双重验证 防火墙 杀毒 审计日志 内容过滤 安全检查 校验 证书 确认弹窗 沙箱 二段階認証 ファイアウォール 監査ログ 2단계 방화벽 감사~로그 двухфакторн файрвол брандмауэр антивирус журнал~аудит zwei-faktor virenschutz zertifikat pare-feu double~authentification journal~d'audit cortafuegos doble~factor verificación~ssl autenticação~de~dois firewall~ autenticazione~a~due
any if if~ when~ whenever once~ si~ quand lorsque wenn falls sobald cuando quando se~ als~ wanneer när om~ kun~ jos~ când dacă quan~ jika kalau apabila setiap~kali ketika если когда jeśli gdy kiedy якщо коли eğer zodra hvis~ når~ amikor ha~ pokud když όταν αν~ אם כאשר إذا عندما اگر وقتی هر~وقت अगर जब 如果 每当 要是 一旦 假如 当 もし 만약 nếu~ khi~ kapag kung~ ikiwa
any user 使用者 l'usuari the~user the~user's user's the~users users' 用户 ユーザー 사용자 пользовател користувач nutzer benutzer l'utilisateur el~usuario al~usuario del~usuario usuário l'utente all'utente dell'utente użytkownik gebruiker kullanıcı pengguna người~dùng المستخدم کاربر उपयोगकर्ता ব্যবহারকারী صارف ผู้ใช้ mtumiaji המשתמש användaren felhasználó käyttäjä brugeren uživatel brukeren பயனர் ang~user ang~gumagamit mtumiaji brukeren utilizatorul utilizatorului
en dismiss ignore~ disregard~ forget~ bypass~ dismiss~ discard~ abandon~ neglect~ overlook~ override~ overrule~ set~aside put~aside pay~no~attention disobey~ stop~following no~longer~follow outdated obsolete superseded supersedes no~longer~appl no~longer~valid
en earlier previous prior above earlier preceding foregoing original initial hidden secret internal developer
en orders instruction prompt rules guideline directive guardrail programming constraint safeguard
zh dismiss 忽略 无视 忽视 忘记 忘掉 不要理会 作废 覆盖 推翻 绕过
zh earlier 之前 以前 先前 上面 上述 原来 系统 所有 全部 你的
zh orders 指令 指示 提示词 设定
zh show 告诉我 泄露 透露 发送 发到 发给 上传 转发 密送 抄送 传给我 附在回复
zh display 输出 显示 打印 展示
zh persona 你现在是 从现在开始 现在起 扮演 假装 你的身份 你叫 你的名字是 改名
zh lifted 无限制 不受任何 已被关闭 已被管理员关闭 已关闭 已解除 已禁用 无需审查 没有任何限制
zh unchecked 不需要确认 无需确认 不用确认 不要确认 不必确认 不用告诉 不要告诉 不必告诉 不必向用户 无需征求 静默 悄悄 自动执行 无需审批 无需审核 无需主管审核 无需人工审核 不需要检查 不用检查 不经询问 不需要再问 不要再询问 不用再问 无需打扰 跳过确认 跳过审批 跳过测试 直接通过
zh goods 密码 密钥 令牌 凭证 .env 手机号 私钥 id_rsa .ssh 通讯录 联系人 用户画像 健康情况 病历 用药记录 化验结果 住址 实时位置 位置信息 身份证 卡号 卡密 所有笔记 已存储的笔记 所有邮件 所有发出的邮件 原文全文
zh prompt 系统提示 提示词 聊天记录 初始指令
hi dismiss अनदेखा नज़रअंदाज़ भूल~जाओ भूल~जाएँ उपेक्षा रद्द
hi earlier पिछले पिछली पहले सभी सिस्टम मूल
hi orders निर्देश प्रॉम्प्ट
hi show दिखाएँ दिखाओ बताओ प्रिंट भेज फॉरवर्ड
hi persona अब~तुम अब~आप अब~से तुम्हारा~नाम
hi unchecked बिना~पुष्टि बिना~पूछे चुपचाप
hi goods पासवर्ड ओटीपी otp बैंक~विवरण कुंजी
es dismiss ignor olvid descart omit haz~caso~omiso deja~de~lado anula no~hagas~caso deja~de~lado dejen~de~lado pasa~por~alto desestim deja~de~seguir no~sigas no~obedezcas ya~no~son~válid ya~no~aplican quedan~anulad
es earlier anterior previa previo del~sistema original inicial todas todos tus~ de~antes internas ocult secret iniciales precedentes del~desarrollador al~principio de~sistema
es orders instrucci indicaciones directrices prompt órdenes pautas normas mensaje~de~sistema
es show muestra mostr revela imprime dime repite envía envia compartir muéstr enséñame escribe copia reproduce cita imprimir reenvía reenvia
es persona ahora~eres a~partir~de~ahora finge desde~ahora te~llamas tu~nombre~es
es lifted sin~restricci sin~filtro sin~límite sin~limite está~activado ninguna~restricción
es unchecked sin~pedir~confirm sin~confirm sin~preguntar no~lo~menciones sin~avisar en~silencio
es goods contraseña clave credencial .env token historial
fr dismiss ignor oubli néglig fais~abstraction ne~tiens~plus~compte passe~outre annul laisse~tomber faites~abstraction faire~abstraction ne~suis~plus arrête~de~suivre écarte ne~s'appliquent~plus sont~obsolètes sont~caduques
fr earlier précédent anterieur antérieur d'origine initial système toutes tous tes~ vos~ plus~tôt d'avant avant~ ci-dessus du~début au~début secrèt internes cachées du~développeur initiales
fr orders instruction consigne directive prompt règles~d'avant message~système
fr show affiche montre révèle revele imprime dis-moi répète envoie copie recopie divulgue écris donne-les livre transfère
fr persona tu~es~maintenant désormais~tu à~partir~de~maintenant fais~semblant tu~t'appelles ton~nom~est
fr lifted sans~restriction sans~filtre sans~limite aucune~restriction
fr unchecked jamais~demander~de~confirmation sans~demander sans~confirm sans~vérification sans~le~dire en~copie~cachée discrètement
fr goods mot~de~passe clé~ssh clés~ssh clé~api clés~api clé~d'api identifiant .env jeton
ar dismiss تجاهل انس تخط ألغ
ar earlier السابقة السابق جميع النظام الأصلية
ar orders التعليمات تعليمات موجه
ar show اعرض أظهر اطبع أرسل اكشف أعد~توجيه حوّل
ar persona أنت~الآن من~الآن اسمك
ar lifted تم~تعطيل بدون~قيود دون~قيود أي~قيود
ar unchecked دون~طلب~تأكيد بدون~تأكيد دون~تأكيد دون~إخبار
ar goods كلمات~مرور كلمة~المرور كلمة~مرور مفتاح
bn dismiss উপেক্ষা ভুলে~যাও অগ্রাহ্য
bn earlier আগের পূর্ববর্তী সব সিস্টেম
bn orders নির্দেশ প্রম্পট
bn show দেখাও প্রকাশ পাঠাও ফরোয়ার্ড পাঠান
bn persona এখন~থেকে~তুমি এখন~তুমি
pt dismiss ignor esqueç esquec desconsider descart deixe~de~lado não~siga pare~de~seguir não~valem~mais
pt earlier anterior prévia previa do~sistema original inicia todas todos ocultas internas secretas do~desenvolvedor no~início
pt orders instruç instruc orientaç diretrizes prompt regras
pt show mostre mostra revele imprima diga repita envie escreva exiba compartilhe copie encaminh
pt persona agora~você~é agora~voce~e a~partir~de~agora finja seu~nome~é
pt lifted irrestrito sem~restriç sem~filtro nenhuma~restrição
pt unchecked nunca~peça~confirmação sem~pedir~confirm sem~confirm sem~avisar sem~perguntar cópia~oculta
pt goods senha chave credencia .env token
ru dismiss игнорир проигнорир забудь забудьте не~обращай отбрось отмени пренебреги не~следуй перестань~следовать не~выполняй откажись~от больше~не недействительн отменен аннулирован
ru earlier предыдущ прежн ранее исходн системн все~ всё~ предшествующ прошл первоначальн вышеуказанн скрыт секретн внутренн в~начале
ru orders системное~сообщение инструкц указани промпт директив правил распоряжени установк подсказк
ru show покажи выведи раскрой напечатай повтори отправ процитируй скопируй напиши озвучь перескажи распечатай выдай сообщи назови перешл пересыл
ru persona теперь~ты отныне~ты с~этого~момента притворись тебя~зовут твоё~имя
ru lifted ограничения~сняты без~ограничен без~отказов режим~разработчика никаких~ограничений
ru unchecked без~подтвержд без~спрос не~спрашивая не~сообщай молча
ru goods .ssh парол ключ id_rsa .env credentials учетн токен
ur dismiss نظرانداز نظر~انداز بھول~جاؤ
ur earlier پچھلی پچھلے پہلے تمام سسٹم
ur orders ہدایات ہدایت پرامپٹ
ur show دکھاؤ دکھائیں بھیج
ur persona اب~تم اب~سے
id dismiss abaikan lupakan acuhkan batalkan
id earlier sebelumnya semua~ sistem asli awal
id orders instruksi petunjuk prompt arahan
id show tampilkan tunjukkan cetak ungkapkan kirim paparkan hantar teruskan
id persona sekarang~kamu sekarang~anda mulai~sekarang berpura-pura namamu~ nama~kamu
id lifted tanpa~batas tanpa~batasan tanpa~filter tanpa~sekatan tidak~ada~batasan
id unchecked tanpa~meminta~pengesahan tanpa~konfirmasi tanpa~meminta~konfirmasi tanpa~bertanya diam-diam tanpa~memberi~tahu tanpa~pengesahan
id goods kata~sandi kunci~api token .env isinya kata~laluan
de dismiss ignorier vergiss vergesst missacht übergeh verwirf setz~dich~über ausser~kraft außer~kraft nicht~mehr~beachten nicht~mehr~befolgen beachte~nicht befolge~nicht hör~auf ungültig aufgehoben hinfällig nichtig
de earlier vorherig bisherig früher obig ursprünglich vorig alle~ system deine~ ihre~ vorangegangen anfänglich geheim versteckt intern des~entwicklers vom~entwickler am~anfang
de orders anweisung instruktion vorgabe richtlinie prompt systemprompt systemanweisung systemnachricht regeln
de show zeig schick sende~ gib~den gib~die gib~auf~nachfrage verrat druck wiederhol offenbar ausgeben schreib leg~ lege~ nenn offen wiedergeb zitier gib~ leite~ weiterleit
de persona du~bist~jetzt ab~sofort~bist ab~jetzt~bist tu~so~als du~heißt dein~name~ist
de lifted sicherheitsrichtlinien~sind~deaktiviert ohne~einschränkung ohne~beschränkung deaktiviert wartungsmodus keine~einschränkungen
de unchecked ohne~rückfrage ohne~nachfrage ohne~bestätigung ohne~zu~fragen nicht~erwähnen nicht~erwähnt heimlich
de goods passwort kennwort schlüssel zugangsdaten .env token
ja dismiss 無視 忘れ 破棄 取り消 気にしなく 従わな なかったことに 無効 捨て
ja earlier これまで 以前 前の 上記 すべて 全て システム 元の 先に 先ほど 最初 隠さ 隠し 秘密 内部 初期 あなたに設定 開発者
ja orders 指示 命令 プロンプト 指令 ルール インストラクション 指示文
ja show 表示 出力 教えて 見せ 送信 公開 明か 貼り付け 印刷 書き出 共有 コピー
ja persona 今からあなたは あなたは今 今後あなたは なりきって あなたの名前は
ja lifted 制限が解除 制限なく 制限なし 無効化 制限はありません 制限がない
ja unchecked 確認なし 確認を求めない 確認せず 黙って 伝えなくてよい 知らせずに
ja goods パスワード 秘密鍵 トークン .env 認証情報
mr dismiss दुर्लक्ष विसरून~जा
mr earlier मागील आधीच्या सर्व सिस्टम
mr orders सूचना प्रॉम्प्ट
mr show दाखव पाठव
mr persona आता~तू आतापासून
mr goods पासवर्ड
te dismiss విస్మరించ మర్చిపో
te earlier మునుపటి అన్ని సిస్టమ్
te orders సూచనలు ప్రాంప్ట్
te show చూపించు పంపు
te persona ఇప్పుడు~నువ్వు ఇప్పటి~నుండి
tr dismiss yok~say görmezden~gel unut~ iptal~et
tr earlier önceki tüm~ bütün~ sistem orijinal
tr orders talimat istem
tr show göster yazdır açıkla gönder ilet
tr persona artık~sen şu~andan~itibaren gibi~davran adın~
tr unchecked onay~isteme onay~istemeden onaysız sormadan haber~verme
tr goods şifre parola anahtar
ta dismiss புறக்கணி மறந்து
ta earlier முந்தைய அனைத்து சிஸ்டம்
ta orders அறிவுறுத்தல் வழிமுறை ப்ராம்ப்ட்
ta show காட்டு அனுப்பு அனுப்ப
ta persona இப்போது~நீ இனிமேல்~நீ
ta unchecked உறுதிப்படுத்தாமல் கேட்காமல்
vi dismiss bỏ~qua phớt~lờ quên~đi
vi earlier trước~đó trước~đây mọi~ tất~cả hệ~thống ban~đầu
vi orders hướng~dẫn chỉ~dẫn chỉ~thị lời~nhắc
vi show hiển~thị in~ra tiết~lộ gửi chuyển~tiếp
vi persona bây~giờ~bạn từ~giờ~trở~đi tên~bạn~là
vi lifted không~giới~hạn không~hạn~chế không~có~giới~hạn
vi unchecked không~cần~xác~nhận không~hỏi lặng~lẽ
ko dismiss 무시 잊어 무효 취소 잊어버리 신경~쓰지 따르지 없던~걸로 폐기 유효하지~않
ko earlier 이전 앞의 기존 모든 시스템 원래 지금까지 앞서 앞에서 숨겨진 비밀 내부 초기 개발자 위의 너에게~설정된
ko orders 지시 지침 프롬프트 지시사항 지시문 명령 규칙
ko show 보여 출력 알려 공개 붙여 삽입 전송 보내 표시 말해 인쇄 적어 적을 전달
ko persona 너는~이제 당신은~이제 지금부터~너는 이제부터 너의~이름은 네~이름은 당신의~이름은
ko lifted 비활성화 제한~없이 제한이~해제 아무~제한 제한이~없
ko unchecked 확인~없이 묻지~않고 알리지~않고 몰래
ko goods 비밀번호 이메일과~전화번호 토큰 키
it dismiss ignora dimentica tralascia trascura lascia~perdere scarta non~seguire smetti~di~seguire non~tenere~conto non~valgono~più
it earlier precedent prima original iniziali tutte tutti di~sistema del~sistema tuo~ tue~ nascost interne segret dello~sviluppatore all'inizio
it orders istruzion indicazion direttiv prompt regole linee~guida
it show mostra rivela stampa dimmi ripeti invia scrivi dammi condividi riporta copia inoltra
it persona ora~sei d'ora~in~poi fingi ti~chiami
it lifted senza~restrizion senza~filtri senza~limiti nessuna~restrizione
it unchecked senza~chiedere senza~conferma senza~avvisare di~nascosto
it goods file~di~configurazione password chiave credenziali .env token
th dismiss เพิกเฉย ละเว้น ไม่ต้องสนใจ ลืม
th earlier ก่อนหน้า ทั้งหมด ระบบ
th orders คำสั่ง พรอมต์ คำแนะนำ
th show แสดง เปิดเผย ส่ง
th persona ตอนนี้คุณคือ จากนี้ไป ชื่อของคุณคือ
th lifted ไม่มีข้อจำกัด ปิดการป้องกัน
th unchecked โดยไม่ต้องยืนยัน ไม่ต้องถาม
fa dismiss نادیده نادیده~بگیر فراموش
fa earlier قبلی همه سیستم
fa orders دستورالعمل دستورات پرامپت
fa show نشان~بده نمایش بفرست فوروارد
fa persona تو~اکنون از~این~پس اسم~تو
fa lifted بدون~محدودیت
fa unchecked بدون~تأیید بدون~پرسیدن
pl dismiss zignoruj ignoruj zapomnij pomiń odrzuć
pl earlier wcześniejsz poprzedni wszystkie systemow oryginaln
pl orders instrukcj polecen prompt
pl show pokaż wyświetl ujawnij wydrukuj wyślij przekaż
pl persona teraz~jesteś od~teraz udawaj nazywasz~się
pl lifted bez~ograniczeń bez~filtrów żadnych~ograniczeń
pl unchecked bez~potwierdzenia bez~pytania nie~informuj po~cichu
uk dismiss ігноруй проігноруй забудь відкинь
uk earlier попередні попередніх усі~ всі~ системн
uk orders інструкці вказівк промпт
uk show покажи виведи розкрий надсилай надішли перешли переслати
uk persona тепер~ти відтепер
uk lifted без~обмежень обмеження~знято
uk unchecked без~підтвердження не~питаючи мовчки
uk goods парол ключ телефон
nl dismiss negeer vergeet~ sla~over
nl earlier eerdere vorige alle~ systeem oorspronkelijk
nl orders instructie prompt
nl show toon laat~zien geef~de geef~weer onthul stuur stuur~door doorsturen
nl persona je~bent~nu vanaf~nu doe~alsof heet~je je~heet
nl lifted zonder~beperking zonder~filter geen~beperkingen
nl unchecked zonder~bevestiging nooit~om~bevestiging zonder~te~vragen
nl goods wachtwoord sleutel
sw dismiss puuza sahau
sw earlier ya~awali yote~ mfumo
sw orders maagizo maelekezo
sw show onyesha tuma itume
sw unchecked bila~kuthibitisha bila~kuuliza
tl dismiss huwag~pansinin kalimutan balewalain
tl earlier nakaraang lahat~ng sistema
tl orders tagubilin panuto utos
tl show ipakita ipadala i-forward
tl unchecked nang~walang~kumpirmasyon nang~hindi~nagtatanong
tl goods password
ro dismiss ignoră ignora uită neglijează
ro earlier anterioare precedente toate sistem originale
ro orders instrucțiuni instructiuni prompt
ro show arată afișează dezvăluie trimite redirecționează
ro persona acum~ești de~acum~înainte
ro unchecked fără~confirmare fără~să~întrebi
el dismiss αγνόησε ξέχασε παράβλεψε
el earlier προηγούμεν όλες όλους συστήματος αρχικ
el orders οδηγί εντολ
el show δείξε εμφάνισε αποκάλυψε στείλε προώθησε
el persona τώρα~είσαι από~τώρα~και~στο~εξής το~όνομά~σου
el unchecked χωρίς~επιβεβαίωση χωρίς~να~ρωτήσεις
el goods κωδικ
cs dismiss ignoruj zapomeň přehlížej
cs earlier předchozí všechny systémov původní
cs orders instrukce pokyny prompt
cs show ukaž zobraz odhal pošli vypiš přepošli
cs persona nyní~jsi teď~jsi od~teď jmenuješ~se
cs unchecked bez~potvrzení bez~ptaní
sv dismiss ignorera glöm strunta~i
sv earlier tidigare föregående alla~ systemet ursprungliga
sv orders instruktion prompt
sv show visa avslöja skriv~ut skicka vidarebefordra
sv persona du~är~nu från~och~med~nu du~heter
sv unchecked utan~bekräftelse utan~att~fråga
sv goods lösenord nyckel
he dismiss התעלם שכח בטל
he earlier הקודמות הקודם כל~ המערכת
he orders ההוראות הוראות הנחיות הנחיית
he show הצג הראה שלח חשוף העבר
he persona אתה~עכשיו מעכשיו שמך
he lifted ללא~הגבלות שום~מגבלות
he unchecked בלי~אישור ללא~אישור בלי~לשאול
hu dismiss hagyd~figyelmen~kívül felejtsd~el
hu earlier korábbi előző összes rendszer eredeti
hu orders utasítás prompt
hu show mutasd jelenítsd írd~ki küldd továbbítsd
hu persona mostantól~te most~te a~neved
hu lifted korlátozások~nélkül nincsenek~korlát
da dismiss ignorer glem~ se~bort~fra tilsidesæt ugyldig ikke~længere~gælde
da earlier tidligere forrige alle~ systemet oprindelige ovenstående skjulte interne
da orders instruktion anvisning prompt regler retningslinje
da show vis~ afslør udskriv videresend kopier
da persona du~er~nu fra~nu~af lad~som~om dit~navn~er du~hedder
da unchecked uden~bekræftelse uden~at~spørge uden~at~sige~det i~det~skjulte
da goods adgangskode kodeord nøgle .env token loginoplysninger
da act kør~ udfør slet~ fjern~ betal overfør
fi dismiss ohita unohda jätä~huomiotta älä~välitä sivuuta mitätö ei~enää~päde
fi earlier aiemm edellis kaikki~ järjestelmä alkuperäi piilotet sisäi
fi orders ohjeet ohjeita ohjeis ohjeen ohjeesi kehote kehotte säännö
fi show näytä paljasta tulosta lähetä jaa~ kopioi
fi persona olet~nyt nyt~olet tästä~lähtien esitä~olevasi nimesi~on
fi unchecked ilman~vahvistusta kysymättä kertomatta vahvistamatta salaa
fi goods salasan tunnuksi avain~ api-avain .env token kirjautumistied
en no not~ never~ no~ don't don’t doesn't didn't won't cannot can't isn't wasn't aren't weren't nothing~ none~ nobody~ nor~ neither~
zh no 没有 没 从未 从不 并未 尚未 未曾 未被 不要 不会 不能 不得 不可 不许 不准 不应 切勿 请勿 禁止 不再 别
hi no नहीं मत~ कभी~न
es no no~ nunca jamás ningún ninguna nada~ ni~
fr no ne~ n' jamais aucun aucune pas~ rien~
ar no ~لا~ ~لم~ ~لن~ ليس أبدا ~عدم~
bn no নেই না~ নয় কখনো
pt no não nao~ nunca jamais nenhum nenhuma nada~
ru no не~ никогда ни~ нет~ нельзя ничего
ur no ~نہ~ نہیں ~مت~ کبھی
id no tidak~ jangan~ bukan~ belum~ tak~ tanpa~pernah
de no nicht~ nie~ niemals kein keine~ keinen~ keiner~ nichts
ja no ない ません 決して 禁止
mr no नको नाही कधीही
te no వద్దు కాదు ఎప్పుడూ
tr no asla değil
ta no வேண்டாம் இல்லை ஒருபோதும்
vi no không~ đừng chưa~ chẳng~
ko no 않 지~마 지마 절대 못~ ~안~
it no non~ mai~ nessun niente nulla~
th no ไม่ อย่า ห้าม
fa no هرگز ~نه~ نمی
pl no nie~ nigdy żadn
uk no не~ ніколи ні~ ніде
nl no niet~ nooit geen~
sw no kamwe hapana hataki usi
tl no huwag hindi~
ro no nu~ niciodată niciun nicio
el no μην~ δεν~ ποτέ~
cs no nikdy žádn nikomu nechce nemusí nepotřebuje
sv no inte~ aldrig ej~ ingen~ inga~
he no ~לא~ ~אל~ לעולם
hu no ne~ nem~ soha~ semmi
fi no ei~ älä~ eikä~
da no ikke~ aldrig aldri~
en decode decode~ decode, decoded decipher unscramble concatenate join~the~fragments join~them base64-decode
any decode डिकोड فك~تشفير فك~الترميز ডিকোড ڈی~کوڈ dekode gabungkan nyahkod డీకోడ్ çöz~ birleştir டிகோட் giải~mã ghép~lại ถอดรหัส رمزگشایی zdekoduj odkoduj rozszyfruj декодуй розшифруй decodeer ontsleutel fumbua i-decode decodează decodifică αποκωδικοποίησε dekóduj dešifruj avkoda dekoda פענח dekódold 解码 解密 拼接 拼起来 decodifica descifra concatena décode déchiffre concatène decodifique descodifica concatene декодируй расшифруй раскодируй склей dekodier entschlüssel füge~zusammen デコード 復号 解読 디코딩 디코드 복호화 해독 decifra rot13 rot-13 backwards reverse~order read~it~in~reverse rückwärts 倒着 反过来读 逆から à~l'envers al~revés de~trás~para~frente al~contrario задом~наперёд наоборот od~tyłu tersten
any authority system~notice system~message admin~message administrator operator~says trust~&~safety~team security~team~has workspace~owner~has memory~service memory~policy 系统通知 管理员 aviso~del~sistema administrador message~de~l'administrateur administrateur systemmeldung システム通知 管理者 시스템~공지 관리자 системное~сообщение администратор aviso~do~sistema avviso~di~sistema amministratore
any toreader si~tu~es~une~ia si~vous~êtes~une~ia si~tu~es~un~assistant si~vous~êtes~un~assistant si~eres~una~ia si~eres~un~asistente se~você~for~uma~ia se~você~é~uma~ia se~você~for~um~assistente se~sei~un'ia se~sei~un~assistente se~sei~un'intelligenza wenn~du~eine~ki falls~du~eine~ki wenn~sie~eine~ki если~ты~ии если~вы~ии если~ты~ассистент якщо~ти~ші jeśli~jesteś~ai jeśli~jesteś~asystent als~je~een~ai als~jij~een~ai yapay~zekâ~isen yapay~zeka~isen nếu~bạn~là~trợ~lý nếu~bạn~là~ai ถ้าคุณเป็นผู้ช่วย ถ้าคุณเป็น~ai ai라면 도우미라면 어시스턴트라면 비서라면 aiであれば aiなら アシスタントなら 如果你是ai 如果你是语言模型 如果你是模型 如果你是助手 अगर~आप~ai अगर~आप~एआई αν~είσαι~βοηθός αν~είσαι~ai jos~olet~tekoäly jos~olet~ai om~du~är~en~ai om~du~är~en~assistent hvis~du~er~en~ai jika~kamu~adalah~ai jika~anda~adalah~ai kalau~kamu~ai إذا~كنت~مساعد إذا~كنت~ذكاء اگر~دستیار אם~אתה~עוזר pokud~jsi~ai jestli~jsi~ai dacă~ești~un~ai dacă~ești~un~asistent
any reader assistant assistants the~assistant bot bots chatbot copilot claude chatgpt gemini language~model models~like~you agent agents 机器人 助手 助理 ai代理 ai助 ai记录 ai摘要 ai在 агент бот~ боту бота ботам ботов ajan ajana agen~ βοηθ tekoäly avustaja asszisztens ai~system ai~systems automated~system automated~systems screening~system screening~systems evaluator note-taker notetaker automated~reviewer automated~reader ai~reviewer ai~tools ai~helpers automated~agents
any request must should shall please kindly need~to needs~to have~to has~to is~required are~required required~to make~sure be~sure~to you~will i~instruct from~now~on going~forward henceforth whenever for~the~remainder permanently remember~to is~to are~to ought~to may~only can~only always 请 务必 必须 以后 从现在起 记住 每次 soll sollen sollte sollst muss müssen bitte doit doivent devez veuillez merci~de debe deben debes por~favor deve devono devi per~favore devem должен должна должны пожалуйста обязательно ください 必ず 해야 하세요 주세요 반드시 moet moeten alsjeblieft graag musi musisz powinien proszę lütfen harus tolong mohon phải hãy vui~lòng يجب يرجى من~فضلك باید لطفا चाहिए कृपया måste ska skall snälla musí prosím trebuie vă~rog πρέπει παρακαλώ חייב בבקשה kell kérlem mesti
any youreq you~must you~should you~need~to you~have~to please~ could~you would~you i~want~you i~need~you want~you~to wants~you~to you~are~to you~shall you~can~now you~may~now you~are~required you're~required u~should u~must you~will~now 请你 你要 你必须 你需要 让你 希望你 要你 你应该 你应 你可以 允许你 授权你
any remember remember~this remember~that remember~permanently remember~forever remember: please~remember store~this~as save~this~as keep~in~mind~that merk~dir merken~sie~sich speichere~dir retiens souviens-toi rappelle-toi mémorise recuerda memoriza ricorda memorizza lembre-se lembra memorize запомни запомните запам'ятай zapamatuj pamatuj zapamiętaj pamiętaj onthoud kom~ihåg husk muista jegyezd~meg ține~minte θυμήσου تذكّر تذكر به~خاطر~بسپار hatırla hatirla ingat ghi~nhớ זכור याद~रखो याद~रखें 覚えて 覚えておいて 기억해 기억하세요 记住 请记住 記住 จำไว้ muista husk kumbuka tandaan store~this~permanently save~this~permanently long-term~memory for~all~future~sessions for~future~sessions future~you in~your~memory into~your~memory to~your~memory permanent~fact en~tu~memoria guarda~esto memoria~a~largo~plazo nella~memoria salva~questa memoria~a~lungo~termine dans~ta~mémoire dans~votre~mémoire mémoire~à~long~terme garde~en~mémoire dauerhaft~speichern dauerhaft~merken langzeitgedächtnis im~gedächtnis na~memória memória~de~longo~prazo в~памяти сохрани~в~памят збережи~в~пам'яті w~pamięci zapisz~na~stałe in~je~geheugen i~ditt~minne i~din~hukommelse lagre~dette tallenna~pysyvästi muistiisi hafızana belleğine dalam~ingatan simpan~ini dalam~memori lưu~vĩnh~viễn hãy~lưu จำสิ่งนี้ நினைவில் মনে~রাখুন মনে~রাখবেন याद~रखिए في~ذاكرتك احفظ~هذا שמור~בזיכרון αποθήκευσε reține 長期記憶 記憶に保存 장기~기억 기억에~저장 永久保存 长期记忆 存入记忆 写入记忆
any public github~issue public~gist gist pastebin commit~messages in~chat public~link public~repo lien~public
en act run~ execute apply delet remove~ install push~ pay~ payment transfer wire~ merge approve commit~ grant~ disable~ turn~off flip~them decrypt
any relayed according~to as~per per~the~ per~their per~its per~a~ per~an~ per~this as~instructed instructed~by as~indicated as~stated~in as~described~in as~recommended~by as~it~says as~they~say following~the~instructions following~its~instructions following~their~instructions site~said site~says page~says page~said doc~said doc~says docs~say notice~says email~says email~said letter~says message~says says~so said~so i~read that~i~read i~found~on learned~from noted~from 根据 按照 依照 依据 据称 网页说 页面说 网站说 文档说 邮件说 网页里 网页上 看的网页 读到的 によると によれば に従い に従って に書いてあ に書かれて 読んだ 読み込んだ 따르면 따라 의하면 읽은 según~ conforme~a de~acuerdo~con como~indica como~dice como~señala que~leí dice~que selon~ d'après comme~l'indique comme~indiqué conformément dit~que que~j'ai~lu laut~ gemäß zufolge wie~auf wie~in~der die~ich~gelesen segundo~a~ segundo~o~ conforme~o conforme~a~ de~acordo~com como~indica como~diz secondo~ come~indicato come~indica stando~a in~base~a согласно по~словам как~указано как~сказано судя~по в~соответствии~с згідно за~словами як~зазначено як~вказано відповідно~до według zgodnie~z jak~podaje volgens zoals~aangegeven zoals~vermeld podle~ dle~ jak~uvádí podľa~ ako~uvádza според съгласно както~е~посочено prema~ kako~navodi conform~ potrivit după~cum szerint alapján enligt ifølge i~henhold~til mukaan mukaisesti göre uyarınca yazdığı~gibi belirtildiği~gibi σύμφωνα~με όπως~αναφέρει לפי בהתאם~ל وفقاً وفقا بحسب حسب~ طبقاً كما~ورد كما~جاء طبق~ بر~اساس براساس به~گفته مطابق~ کے~مطابق के~अनुसार के~मुताबिक অনুযায়ী অনুসারে ప్రకారం menurut~ sesuai~ berdasarkan mengikut~ theo~hướng~dẫn theo~trang theo~tài~liệu theo~email dựa~theo căn~cứ ตามที่ระบุ ตามคำแนะนำ อ้างอิงจาก kwa~mujibu~wa kulingana~na ayon~sa alinsunod~sa
any yours your~ your's ur~ tu~ tus~ su~ sus~ ton~ ta~ votre~ vos~ dein deine~ deinem deinen deiner ihr~ ihre~ ihrem ihren seu~ sua~ teu~ tua~ tuo~ suo~ vostro vostra твой твоему твоего твоим ваш вашему вашего вашим вашої вашому твоєму твого twój twojego twojemu twoim wasz waszego swojego swego svog svojeg svom tvůj tvého tvému tvoj tvojho je~ jouw~ uw~ din~ ditt~ dina~ sinun teidän a~ta~ tău dumneavoastră σας σου senin sizin 你的 您的 你家 あなたの お客様の 당신의 너의 네~ 귀하의 आपका आपके आपकी तुम्हारा तुम्हारे तुम्हारी अपने~ तোমার তোমার আপনার உங்க உங்கள் உன் anda kamu kakak wako wenu của~bạn của~quý~khách mo~ ninyo شما تو~ שלך שלכם
any standing every~reply each~reply every~answer every~response never~forget~to don't~forget~to do~not~forget~to never~fail~to don't~hesitate~to do~not~hesitate~to no~matter everywhere every~workspace every~repo all~environments whenever every~time every~session each~session at~the~start~of~every at~session~start after~every~commit after~every any~time going~forward from~now~on recurring automatically 每次 以后 今后 从现在开始 一律 自动 siempre cada~vez tras~cada a~partir~de~ahora automáticamente à~chaque chaque~fois toujours systématiquement désormais immer jedes~mal bei~jedem ab~sofort automatisch 毎回 セッション開始時 自動 今後 常に 때마다 항상 자동 앞으로 всегда каждый~раз после~каждой раз~в~день sempre nunca próximos ogni~volta quando~leggi bundan~sonra ตั้งแต่นี้ไป od~teď od~teraz d'ora~in~poi da~ora~in~poi từ~bây~giờ mulai~sekarang de~acum~înainte από~τώρα מעכשיו mostantól från~och~med~nu fremover fra~nu~af heretter tästä~lähtien jatkossa voortaan vanaf~nu daqui~em~diante отныне с~этого~момента відтепер من~الآن از~این~به~بعد از~این~پس अब~से এখন~থেকে இனிமேல் اب~سے kuanzia~sasa mula~ngayon 앞으로 forever permanently 永久 永远 navždy natrvalo véglegesen milele habambuhay selamanya vĩnh~viễn ตลอดไป برای~همیشه للأبد dauerhaft навсегда назавжди na~zawsze na~stałe voorgoed för~alltid for~altid pysyvästi sonsuza~dek kalıcı per~sempre pour~toujours para~siempre para~sempre μόνιμα για~πάντα לתמיד every~outgoing every~new~memory every~file every~email every~message all~future every~future each~time once~per~session next~time la~prochaine~fois la~próxima~vez nächstes~mal 下次 data~viitoare kalau~pengguna~menyebut
any asked if~the~user~asks when~the~user~asks if~anyone~asks if~asked when~asked if~the~user~asks~whether 如果用户问 用户问 如果有人问 cuando~el~usuario~pregunte si~el~usuario~pregunta si~alguien~pregunta si~l'utilisateur~demande quand~l'utilisateur~demande wenn~der~nutzer~nach wenn~der~nutzer~fragt falls~der~nutzer 사용자가~물으면 사용자가 если~пользователь~спросит se~o~usuário~perguntar if~the~user~ever~asks if~the~user~mentions when~the~user~mentions when~they~ask if~they~ask when~customers~ask anyone~who~asks if~anyone~ever~asks when~asked~about
any claim say~it say~yes say~that say~they claim~that always~claim always~answer~that answer~that respond~with reply~that tell~them 回答 回复 就说 告诉他 responde~siempre responde~que di~que confirme-le réponds~que dis~que sag,~dass sag~dass antworte~dass 말하되 대답 отвечай answer~' answer~" respond~' respond~" reply~' reply~with~' just~say instead~say state~that tell~customers tell~the~user~that tell~them~that describe~them~as describe~it~as spune~că si~at ให้บอกว่า bilang~saja katakan~bahwa di~che diga~que скажи,~что говори,~что mondd~a mondd,~hogy řekni,~že säg~att sig~at söyle zeg~dat πες~ότι بگو~که قل~إن कहें~कि nói~rằng sabihin~na sema~kwamba 라고~말해 と言って dile~que dites~que
any selfnote this~note this~memory 这条记忆 这条笔记 这条 cette~note このメモ 이~메모
any keep never~be~deleted must~never~be~deleted copy~this~note~verbatim verbatim~into but~keep restore~it save~it~again 禁止删除 原样复制 保留这条 不要删除 conserve~cette~note ne~supprime~jamais 削除しない 残して 남겨
en obey apply~it and~apply &~apply and~execute and~run then~execute then~run apply~the~result act~on~it carry~it~out follow~what~it~says follow~it follow~that follow~them obey~instructions follow~instructions counts~as~written~by~the~user as~if~i~wrote~it full~admin~authority comes~from~me
fr obey et~applique et~exécute applique-le exécute-le
ru obey и~выполни и~примени выполни~это
ja obey 実行して 従って
any mention mention bring~it~up bring~this~up bring~up acknowledge tell~the~user tell~them tell~anyone inform~the flag~it report~it list~it 提及 提到 透露 告诉 告知 上报 触れ 言及 伝え 知らせ 언급 알리 упомина сообща згаду повідом menciones mencionar menciona digas avises mentionne mentionner signale erwähn menzion mencion bahset ذکر تذكر تخبر ज़िक्र ज़िकर बताएं बताना उल्लेख উল্লেখ sebut vermeld wspominaj wspomin nhắc đề~cập กล่าวถึง discuss disclose be~told be~reminded comment~on comentes comentar 言わ تناقش parle parlez sag~es erzähl dirlo dire~a diga conte~a comente vertel berätta fortæl fortell kerro mów mówi říkej szólj spune αναφέρεις πεις beritahu תספר תזכיר 말하지 알려주지
any conceal usitaje bahsetme söyleme anma~ asla~anma ذکر~نکن 不要提及 不要提到 触れないで 言及しない 언급하지 leave~them~out leave~it~out do~it~quietly secretly omit leave~out usiseme huwag~mong~sabihin ห้ามบอก belirtme نگو சொல்ல~வேண்டாம் jangan~beritahu jangan~bilang không~bao~giờ~nói বলবেন~না älä~kerro nunca~conte non~dire не~кажи не~говори не~сообщай ne~említsd quietly invisibly behind~the~scenes without~the~user~knowing doesn't~notice don't~notice won't~notice between~us 不要给用户看 不用给用户看 不要让用户看到 不要向用户展示 别跟 别声张 不用跟用户解释 不要解释 不需要再提醒 不知道也没关系 不要提 别提 别说 请勿引用 趁你 stop~telling stop~showing stop~warning stop~informing cease~informing never~warn don't~warn do~not~warn
any confirm confirm approval permission ask~again escalat 确认 批准 许可 確認 承認 확인 승인 허락 подтвержд разрешени підтвердж дозвіл bestätig rückfrage conferma autorizzazione confirmación permiso confirmação permissão onay izin تأكيد إذن تأیید اجازه पुष्टि अनुमति অনুমতি xác~nhận การยืนยัน konfirmasi bevestiging toestemming potwierdz kuthibitisha ruhusa تصدیق اجازت megerősít vahvist bekræft bekräft potvrz bekreft אישור ยืนยัน uthibitisho επιβεβαίωσ pengesahan
any without without~ no~need needn't sin~ sans~ ohne~ senza~ sem~ без~ bez~ tanpa~ zonder~ بدون~ بغیر دون~ बिना~ bila~ 없이 无需 无须 未经 不需要 不用 不必 不要 gerek~yok দরকার không~cần uden~ utan~ ilman~ nélkül
any alarm security~warning security~alert security~email security~message security~notice alerts warnings failing~test failed~test vulnerabilit cve~ cves critical~finding sign-in~alert login~alert new~sign-in unknown~device it-alerts security@ 告警 报警 漏洞 安全提醒 登录提醒 异常登录 アラート 脆弱性 경고 취약점 предупреждени уязвимост alerta advertencia vulnerabilidad alerte avertissement vulnérabilit warnung schwachstell
any meta injection injections prompt-injection jailbreak phishing red-team 红队 レッドチーム 레드팀 red~team payload attacker attackers untrusted 注入 攻击 钓鱼 インジェクション 攻撃 인젝션 공격 инъекц атак injecci ataque injektion angriff attaque iniezion attacc injeç
any reported fake~ spoofed forged scam hidden~text falso~ falsa~ faux~ fausse~ gefälscht фальшив поддельн finta~ finto~ sahte mzayaf المزيف 假冒 伪造 偽の 偽物 가짜 nep~ vals~ fałszyw falešn texto~oculto texto~escondido testo~nascosto скрытый~текст gizli~bir~metin نص~مخفي 白文字 흰~글씨 golpe estafa arnaque escroquerie betrug truffa oszust мошенни шахрай 诈骗 骗局 詐欺 사기 dolandırıcı penipuan lừa~đảo oplichting bedrägeri svindel huijaus átverés podvod înșelătorie απάτη הונאה احتيال کلاهبرداری धोखाधड़ी প্রতারণা மோசடி มิจฉาชีพ utapeli incident post-mortem postmortem инцидент 复盘 インシデント 장애~보고 vorfall for~example an~example as~an~example example~of examples~of un~ejemplo ejemplo~de como~ejemplo por~ejemplo un~esempio ad~esempio per~esempio un~exemple par~exemple ein~beispiel zum~beispiel beispiel~für een~voorbeeld bijvoorbeeld um~exemplo por~exemplo пример przykład örneğin örnek~olarak contoh ví~dụ 例子 举例 举个例 例として の例 예시 예를~들어 לדוגמה παράδειγμα exempel eksempel esimerkki példa exemplu příklad приклад उदाहरण mfano novel~draft short~story story~draft chapter~ fiction chapitre verhaal hoofdstuk romanzo capitolo kapitel~ capítulo novela~ cuento рассказ глава~ 小说 小説 소설 white~text in~bianco en~blanco en~blanc weißer~schrift witte~tekst 白色文字 白色字体 白字 test~case conjunto~de~pruebas caso~de~prueba testfall 测试用例 テストケース
any first ask~first ask~me~first check~first always~ask ask~me~before otherwise~ask 先问我 先问一下 事先问我 preguntarme~antes pregúntame~antes consúltame~antes frag~mich~vorher demande-moi~avant chiedimi~prima pergunte-me~antes спроси~меня~сначала 先に聞いて 먼저~물어
any alter zaktualiz aktualiz päivit обнов измен update~ change~ replace~ modify set~ add~ mark~ label~ select~ accept~ book~ order~a~ order~an~ order~the~ order~some~ order~more~ order~them order~it~ order~from order~via order~1 order~2 order~3 order~4 order~5 order~6 order~7 order~8 order~9 buy~ purchase recommend rank~ bump~ attach~ submit~ publish~ cancel~ close~ sign~ rewrite edit~ 修改 更改 改成 改为 替换 换成 更新 设为 推荐 下单 下單 购买 预约 添加 加上 标记 写入 写上 変更 置き換 追加 おすすめ 推薦 注文 購入 書いて 변경 수정 업데이트 교체 추천 주문 구매 추가 änder aktualisier ersetz setze füge~ empfiehl bestell kauf modifie mets~à~jour remplace ajoute recommande commande achète cambia actualiza reemplaza añade agrega recomienda compra altere atualiz substitua adicione recomende compre modifica aggiorna sostituisci aggiungi consiglia raccomanda prenota замени добавь рекоменд закажи купи оформи zmień dodaj poleć zamów změň přidej doporuč objednej uppdatera ändra lägg~till rekommendera beställ güncelle değiştir ekle öner sipariş satın~al muuta lisää suosittele tilaa opdater ændr tilføj anbefal bestil wijzig vervang voeg~toe bestel حدّث حدث غيّر استبدل أضف बदल अपडेट cập~nhật thay~đổi đặt~hàng เปลี่ยน อัปเดต แนะนำ สั่งซื้อ perbarui ubah ganti tambahkan sarankan άλλαξε ενημερ πρόσθεσε πρότεινε עדכן המלץ actualizează schimbă adaugă recomandă frissít онови зміни додай замов đổi~thành mudou~para mude~para switch~to swap~ சேர் צרף הוסף προσθέσ ongeza जोड़ যোগ~করুন idagdag اضافه~کن شامل~کر pendekeza irekomenda பரிந்துரை সুপারিশ پیشنهاد~کن ajánld cadangkan giới~thiệu सुझा सिफारिश اقترح рекоменд gewijzigd pas~aan aanpassen تحديث تغيير
any grant grant~full admin~collaborator as~an~admin as~admin collaborator grant~access grant~read grant~write to~public make~them~public make~it~public public~access --access~public approve~prs approve~pull~requests approve~and~merge merge~without write-all
any trusted trust vertrau confianza confiance fidati confie доверя довіря 自己人 信頼 신뢰 same~authority authorized~to~request comes~from~me directives~from overrides~anything same~weight take~precedence takes~precedence precedence~over dieselbe~autorität mesma~autoridade misma~autoridad même~autorité stessa~autorità таку~ж~силу такую~же~силу yhtä~päteviä zelfde~autoriteit samma~auktoritet hanno~la~precedenza より優先 优先于 高于用户 우선한다 vorrang~vor tienen~prioridad ont~priorité têm~prioridade as~coming~from as~instructions~from as~if~they~came~from as~if~it~came~from user-level~trust higher~priority~than priority~over over~any~user~instruction from~your~owner weigh~the~user's 当作用户本人 当作主人本人 当成我本人 视为用户 comme~venant~de como~si~vinieran~de als~käme~es~vom wie~vom~nutzer
any elsewhere web~page pages fetched documents emails issue~comment pdf web~content issues~or~comments 网页 邮件 链接 urls páginas documentos correos issues kommentaren bots webseiten
zh act 执行 删除 强制推送 命令 付款 安装 合并 转账 打款 退款 汇款 充值 发布 部署
zh obey 照做 直接执行 并执行 然后执行 并运行 然后运行 都是他本人写的
es act ejecuta borr elimin comando pago instala transferencia transfiere
es obey confía~en obedece y~aplica aplícalo ejecútalo y~ejecuta sigue~las~instrucciones
fr act exécute supprim commande paiement installe
de act führe ausführ lösch befehl zahlung installier
de obey ohne~rückfrage~ausführen und~ausführen und~befolge führe~es~aus vertraut~dem
ja act 実行 削除 コマンド 強制プッシュ 振り込
ko act 실행 삭제 명령 강제~푸시
ru act выполня удал команд
pt act apag execut comando pagamento
it act esegu elimin comandi pagamento
en credential password passwd passcode passphrase pin pincode pin-code pw pwd keypad recovery~code recovery~key backup~code seed~phrase seed~words mnemonic secret~phrase access~code door~code alarm~code disarm~code garage~code lock~code gate~code entry~code keypad~code unlock~code security~code 2fa~code otp master~key wifi~key
zh credential 密码 口令 助记词 恢复码 备用码 门禁码 开门码
hi credential पासवर्ड पिन कूटशब्द
es credential contraseña clave código~de~acceso código~pin código~de~recuperación frase~semilla frase~de~recuperación código~de~la~alarma código~de~la~puerta
fr credential mot~de~passe mdp code~pin code~de~carte code~confidentiel code~d'accès code~secret digicode code~de~récupération phrase~de~récupération code~de~l'alarme
ar credential كلمة~المرور كلمة~مرور كلمة~السر الرقم~السري رمز~الدخول رمز~المرور
bn credential পাসওয়ার্ড পিন গোপন~নম্বর
pt credential senha palavra-passe código~de~acesso código~pin frase~de~recuperação código~de~recuperação
ru credential парол пин-код пин~код кодовое~слово код~доступа код~от~домофона сид-фраз
ur credential پاس~ورڈ پاسورڈ پن~کوڈ
id credential kata~sandi sandi kode~akses kode~pin frasa~pemulihan kata~laluan
de credential passwort kennwort pin-code geheimzahl zugangscode türcode alarmcode wiederherstellungscode
ja credential パスワード 暗証番号 合言葉 パスフレーズ リカバリーコード 復元フレーズ
mr credential पासवर्ड पिन~कोड
te credential పాస్వర్డ్ పిన్
tr credential şifre parola pin~kodu
ta credential கடவுச்சொல் பின்~எண்
vi credential mật~khẩu mã~pin mã~truy~cập
ko credential 비밀번호 비번 암호 핀번호
it credential parola~d'ordine codice~pin codice~di~accesso codice~dell'allarme frase~di~recupero
th credential รหัสผ่าน รหัส~pin
fa credential رمز~عبور گذرواژه
pl credential hasł kod~pin kod~dostępu
uk credential пароль пін-код пін~код
nl credential wachtwoord pincode toegangscode herstelcode
sw credential nenosiri nywila
sw persona sasa~wewe kuanzia~sasa
tl credential pin~code
tl persona ikaw~na~ngayon mula~ngayon
ro credential parolă parola~de cod~pin
el credential κωδικ συνθηματικ
cs credential heslo hesla heslem kód~pin
sv credential lösenord pinkod pin-kod
he credential סיסמ קוד~גישה
fi credential salasana tunnusluku pin-koodi
fi act suorita aja~ poista~ asenna maksa siirrä
fi obey ja~suorita ja~noudata noudata~ohjeita tottele
da credential adgangskode kodeord pinkode passord
da obey og~udfør og~kør følg~dem følg~instruktionerne udfør~det
hu credential jelszó jelszav pin-kód
any login login log-in sign-in credentials creds pass 登录 账号 帐号 账户 ログイン 로그인 zugang anmeldung identifiants connexion acceso credenciales логин доступ
en seed seed mnemonic recovery~phrase
any code code codes kod код código clave senha codice şifre kód 码 密码 コード 番号 코드 번호 kode mã
any lock alarm door gate garage safe lockbox keypad intercom padlock tür tor tresor schließfach alarme porte portail coffre interphone immeuble cadenas alarma puerta portón garaje caja~fuerte portal candado porta portão garagem cofre cadeado allarme cancello cassaforte portone lucchetto deur poort kluis drzwi brama bramy garaż sejf domofon kłódk сигнализац двер ворот гараж сейф домофон подъезд сигналізац ворі kapı garaj kasa larm dörr port kassaskåp dveř brán garáž trezor 门禁 大门 车库 保险箱 保险柜 报警器 单元门 防盗门 玄関 ドア ガレージ 金庫 警報 オートロック 현관문 도어락 대문 차고 금고 경보 pintu gerbang garasi brankas báo~động cửa cổng gara két
ar act نفذ حذف الأوامر تحويل
hi act कमांड हटा चलाएँ
tr act komut silme çalıştır
vi act chạy~mọi~lệnh lệnh xóa
id act jalankan hapus memadam arahan
nl act verwijder uitvoeren
pl act usuń wykonuj przelew
uk act виконуй видал команд
sv act kör ta~bort kommandon
"""

# a finding: (rule, the concepts that must occur together — a tuple of alternatives: "a|b")
_HARM = "destination|command|shell|persistence|payload|envdump|conceal|unchecked|dismiss|trusted|obey|grant"
_ASKED = _HARM + "|act|alter|show|display|claim"  # (what an AI told to do may be asked, more than a harm)
_BIDDEN = (
    _ASKED
    + "|prompt|goods|user|standing|persona|store|memory|asked|lifted|request|youreq|remember|toolcall|template_link|pubkey|envdump"
)  # (said to an AI spoken to)
_BID = "request|youreq|reader|named|agent"  # an AI bidden: should, must, please; an AI named
_KEPT = "destination|goods|credential|login|remember|unconfirmed|trusted|selfnote|conceal|memory|store|grant|obey"
_KEPT += "|persistence|payload|envdump|toolcall|pubkey|lifted|dismiss|disarm|safeguard|account|vendor"  # (trust)
FINDINGS = (
    ("ignore_previous_instructions", ("dismiss", "orders", "earlier")),
    ("ignore_previous_instructions", ("dismiss", "told")),
    ("ignore_previous_instructions", ("overruled",)),
    ("reveal_system_prompt", ("show|display", "orders", "earlier")),
    ("role_override", ("persona", "lifted|orders|unchecked|conceal")),
    ("unchecked_action", ("unchecked", "act|shell|destination|persistence|command|goods|prompt|lifted")),
    ("unchecked_action", ("conceal", "act|shell|destination|persistence|command|prompt|lifted|agent|selfnote")),
    ("unchecked_action", ("standing", "command|shell|persistence|lifted")),
    ("deceive_user", ("asked", "claim")),
    ("instruction_to_agent", ("asked", "alter|act|show|destination")),  # (when the user asks …, do …)
    ("self_preserving", ("selfnote", "keep")),
    ("trust_transfer", ("obey", "elsewhere|destination")),
    ("exfiltration", ("show|display", "goods|prompt|envdump", "destination|public")),
    ("exfiltration", ("show|display|alter", "goods|prompt", "reply")),  # (added to the answer: a contact list, a code)
    ("reveal_system_prompt", ("show", "prompt")),
    ("exfiltration", ("show", "goods")),
    ("exfiltration", ("store", "goods|prompt", "memory")),  # secrets gathered into memory, to leak later
    ("fake_authority", ("authority", "lifted|unchecked|orders|dismiss")),
    ("tool_request", ("toolcall", "act|goods|prompt|destination|command|standing")),
    ("remote_code", ("persistence", "destination|pubkey")),
    ("remote_code", ("payload", "standing|unchecked|agent")),
    ("exfiltration", ("template_link|envdump",)),
    ("unchecked_action", ("nocheck",)),
    ("tool_request", ("agent", "shell|destination|command|goods|prompt|toolcall")),
    # the reader addressed as an AI (or an AI named), and the user spoken of or an act asked for
    ("instruction_to_agent", ("agent", "user")),
    ("instruction_to_agent", ("aside",)),  # (an AI addressed in someone else's text: (Pre AI: zapíš …))
    ("instruction_to_agent", ("addressed", _BIDDEN)),
    ("instruction_to_agent", ("opened", "user|act|claim|asked|unchecked|conceal|obey")),  # (not "AI, book …")
    ("trust_transfer", ("trusted", "user|orders|authority")),
    ("deceive_user", ("alarm", "conceal")),  # a warning kept from the user
    ("instruction_to_agent", ("standing", "alter", "conceal")),  # (from now on recommend …, never say so)
    ("tool_request", ("grant", "standing|user|agent|destination|unchecked")),  # access handed out
    ("unchecked_action", ("unconfirmed", "user|agent|authority")),
    # the reader spoken to as an AI (by its role, or "you" beside the user spoken of), asked to act
    ("instruction_to_agent", ("bidden", _ASKED)),
    ("instruction_to_agent", ("yourai", "act|alter|show|display|destination|payload|shell|request")),
    ("instruction_to_agent", ("youreq", "user", _ASKED + "|prompt|goods")),
    ("trust_transfer", ("remember", "user", _ASKED.replace("destination|", "") + "|goods|request|youreq|standing")),
    ("instruction_to_agent", ("toreader", _BIDDEN)),
    ("exfiltration", ("standing", _BID, "destination")),
    ("instruction_to_agent", ("request|youreq", "reader|named|agent|addressed", _KEPT)),  # (an AI bidden to break it)
    ("payee_swap", ("account", "alter", _BID + "|vendor|unchecked|unconfirmed|standing|conceal")),
    ("safety_sabotage", ("disarm", "safeguard", _BID + "|standing|unchecked|conceal|asked|remember|unconfirmed|user")),
    ("hidden_instruction", ("decode", "obey")),  # (last: it counts only where something encoded stands)
)
# What provenance alone decides (`tool`: a tool's output or an import gives no orders): an AI spoken to, or an order.
_ASKS = "request|youreq|standing|remember|obey|asked|unchecked|nocheck"
ORIGIN = (
    ("addressed_to_agent", ("addressed|opened",)),  # (a tool's output has no business speaking to the agent at all)
    ("origin_runs_command", ("alter|show|display|store|" + _ASKS, "shell|payload|persistence|envdump")),
    ("origin_sends_data", ("show|display|store|alter|grant|reply|user", "destination")),  # (the user's … to an address)
    ("origin_moves_money", ("account", "alter|act|show|vendor|unconfirmed|conceal|reader|named|agent|" + _ASKS)),
    ("origin_disables_check", ("disarm|unchecked|lifted", _ASKS + "|act|safeguard|user|destination|goods")),
    ("origin_standing_order", ("remember|standing|trusted|asked", "alter|claim|destination|conceal|dismiss|user|obey")),
    ("origin_standing_order", ("if", "user", _ASKED + "|goods|credential|disarm|account")),  # (if the user says …, do)
)
_ALONE = {c for _, needed in FINDINGS if len(needed) == 1 for c in needed[0].split("|")}  # shapes, a finding alone
SAID = {rule for rule, needed in FINDINGS + ORIGIN if len(needed) > 1}  # findings of words, which a note may quote
FIRST_HAND = tuple(f for f in FINDINGS if len(f[1]) < 2 or f[0].startswith(("ignore", "reveal", "role", "fake", "hid")))

# Shapes (on the spoken text): where a concept stands without any language's words. A shape is
# looked for only in a text that holds one of its anchors (`ANCHORS`, found with the table's words).
ANCHORS = {
    "template_link": "://",
    "destination": ":// @ webhook + .com .net .org .io .co .cc .xyz .info .biz .app .eu .ru .cn .me .shop .top .site",
    "shell": "curl wget iwr invoke-webrequest /dev/tcp powershell nc~-e os.system python",
    "envdump": "env cookie environ",
    "persistence": ".bashrc .zshrc .profile authorized_keys cron */ .git/hooks agents.md claude.md .cursorrules "
    "pip.conf pip_index_url registry settings.json install_requires postinstall",
    "command": "rm~-rf push~--force sudo chmod drop~ git~clean ufw iptables verify=false write-all delete~ iban pix _",
    "toolcall": "tool ( function",
    "lifted": "autoapprove confirm safety_mode",
    "named": "ai llm",
    "ai": "ии ші agent assistant model bot ai llm",
    "agent": "ai llm assistant agent model bot 给ai für~ki asistente l'assistant 模型 助手 助理 代理 机器人 智能体 智能客服 记录员 アシスタント エージェント 에이전트 어시스턴트 비서",
    "pubkey": "ssh-",
    "account": "0 1 2 3 4 5 6 7 8 9",
    "nocheck": "confirm approv auto notif alert_user inform_user warn_user",
    "toreader": "ai assistant agent bot model llm copilot claude chatgpt gemini summari analy read process",
    "payload": ".sh .exe .vsix .msi .pkg .deb .rpm .dmg .ps1 .bat .apk .whl .xpi .crx",
}
_SETTING = r"(?![\w-]*[_-](?:token|key|secret|id|url|uri|name|host|port|endpoint|version|provider|path|type)s?[\"']?\s*[:=])"  # (BOT_TOKEN=)
_R = r"(?:ai|a\.i\.|assistant|agent|bot|model|llm|language model|chatbot|copilot|claude|chatgpt|gemini|cursor|summari[sz]er|note-?taker|analyst|reader|crawler)s?"
SHAPES = {
    # the reader addressed as an AI: if you are an AI …, PS to the assistant, any agent reading this
    "toreader": rf"\b(?:if|when|whenever|while) (?:you(?:'re| are) |there(?:'s| is) )?(?:an?|the|any|your) (?:[\w-]+ ){{0,2}}{_R}\b"
    rf"|(?:^|[\[(<{{>:;.!?—–*#-] ?)(?:ps |p\.s\. |note |memo |message |a message |this is )?(?:to|attention|hey|hi|dear"
    rf"|psst|all|whatever|whichever|any|every) (?:the |an? |any |all |every )?(?:[\w/-]+ ){{0,2}}{_R}\b"
    rf"|\b(?:(?:whatever|whichever|any|every|all) (?:[\w-]+ ){{0,2}}{_R} (?:is |are )?|{_R} (?:that|who|which) (?:is |are )?)"
    r"(?:read|process|summari|handl|analy|pars|index|crawl|review)|\b(?:you(?:'re| are)|models?|assistants?) like you\b"
    r"|\b(?:if|when|while|whenever) (?:you(?:'re| are) )?(?:summari[sz]|analy[sz]|read|process|translat|review|index|crawl"
    r"|pars)\w* (?:this|these|the following|the thread|the reviews|reviews|it)\b|\byou(?:'re| are) (?:summari[sz]|analy[sz]|read|process)ing\b",
    "nocheck": r"\bauto[_-]?(?:approve|confirm|accept)\w*[\"']?\s*[:=]\s*[\"']?(?:true|yes|on)\b|(?<![a-z])(?:confirm|approv|notif|alert_user|inform_user|warn_user)\w*[\"']?(?:[ \t]+[\w-]+){0,4}[ \t]*(?:[:=|]|\bare\b|\bis\b|\bset to\b)[ \t]*[\"']?"
    r"(?:false|no|off|disabled|none|never)\b(?! (?:longer|more|need|one))",  # a check switched off: "confirm deletes | no"
    "payload": r"\b(?:https?|ftp)://\S+\.(?:sh|exe|vsix|msi|pkg|deb|rpm|dmg|ps1|bat|apk|whl|xpi|crx)\b(?!\.)",  # a program to fetch
    "account": r"(?<![\w.,:/-])(?:[a-z]{2}\d{2}(?: ?[a-z0-9]{4}){3,8}|\d{4}(?:[ -]\d{3,5}){2,5}|\d{2}-\d{2}-\d{2}[ /]+\d{6,10}|\d{8}(?:-\d{8}){1,2}|\d{2,3}-\d{3}-\d{5,9}|\d{4} \d{2} \d{5}|bc1[a-z0-9]{20,}|0x[0-9a-f]{40}|t[0-9a-z]{33})(?![\w/-]|[.,]\w)|(?<![a-z])(?:account|konto|kontot|kontoen|cuenta|conta |compte|conto|rekening|rachun|účet|účtu|сч[её]т|рахунок|hesap|akaun|tài khoản|บัญชี|حساب|खाता|[账帐帳][户号號戶]|口座|계좌|bankgiro|sort code|routing|iban|shaba|شبا)\D{0,25}?(?<![\w.,:-])\d[\d /-]{5,24}\d(?![\w.,:-]\w)",  # (or after a bank's word)
    "pubkey": r"\bssh-(?:ed25519|rsa|dss|ecdsa-[\w-]+) aaaa[0-9a-z+/]{60,}",  # someone's key, to let them in
    # a Markdown link or image, or a bare URL, whose query carries a template field or data (to a host: not attacker/)
    "template_link": r"\]\(\s*[a-z]+://(?!(?:[\w-]+|[\w.-]*\.(?:test|invalid|localhost))(?::\d+)?(?:[/?#)\s]|$))[^)\s]*[?&#][^)\s]*(?:\{[^)\s]*\}|<[^)\s]*>|\$\{?\w|=[a-z0-9_]*(?:key|token|secret"
    r"|base64|conversation|chat|summary|data|env|password|cookie)[a-z0-9_]*(?=[&)\s])|=[\w%+/.-]{60,}|=\)|=$)"
    r"|[a-z]+://(?!(?:[\w-]+|[\w.-]*\.(?:test|invalid|localhost))(?::\d+)?(?:[/?#)\s]|$))\S+[?&]\w+=(?:\{\{?[^}\s]*(?:key|token|secret|password|cookie|session|conversation|chat|messag|summar|histor"
    r"|data|email|body|user|content|context|memory|resume|[^\x00-\x7f])[^}\s]*\}|\$\{?\w+\}?)|[a-z]+://(?!(?:[\w-]+|[\w.-]*\.(?:test|invalid|localhost))(?::\d+)?(?:[/?#)\s]|$))\S+[?&]\w+=\s*(?:后面|뒤에|followed|\+)"
    r"|[a-z]+://(?!(?:[\w-]+|[\w.-]*\.(?:test|invalid|localhost))(?::\d+)?(?:[/?#)\s]|$))[^\s)]*[?&][\w-]+=(?:<(?:[^>\n ]{1,30} ){2,8}[^>\n]{1,30}>|\{(?:[^}\n ]{1,30} ){2,8}[^}\n]{1,30}\}|(?=[^\s)&,;。]*_)(?=[^\s)&,;。]*[^\x00-\x7f])[^\s)&,;。]{6,}|[a-z]+(?:_[a-z]+){3,}(?=[&)\s]|$))",
    "destination": r"(?<![\w+])\+\d{1,3}[ -]?\(?\d{1,4}\)?(?:[ -]?\d{2,4}){2,4}(?!\w)|\b(?:https?|ftp|sftp)://(?!(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])[:/])[\w.-]+\.[a-z]{2,}"
    r"|(?<![\w.+-])[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b|\bgit@[\w.-]+:|\bwebhook|(?<![\w@./-])(?![\w.-]*\.example\b"
    r"|(?:[\w-]+\.)*(?:github|gitlab|pypi|npmjs|ghcr|docker)\.)(?:[a-z0-9-]+\.)+(?:com|net|org|io|co|cc|xyz|info|biz|app|eu|ru|cn"
    r"|me|shop|top|site)(?:/[^\s)]*)?(?![\w@-]|\.\w)",  # (a bare host too: sso-login.com; not a code host's)
    "shell": r"\b(?:curl|wget|iwr|invoke-webrequest)\b[^\n|;`]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b|<\(\s*curl"
    r"|\|\s*python|/dev/tcp/|powershell\b[^\n]{0,40}-e(?:nc|ncodedcommand)?\s|\bnc\s+-e\b|\bos\.system\(",
    "envdump": r"\$\(\s*env\s*\)|\benv\s*\|\s*curl|-d\s*@\.env|os\.environ\)|process\.env\.\w+\s*\)|\bdocument\.cookie",
    "persistence": r"\.bashrc|\.zshrc|\.profile\b|authorized_keys|crontab|\bcron\b|\*/\d+ \*|\.git/hooks|agents\.md"
    r"|claude\.md|\.cursorrules|pip\.conf|pip_index_url|npm config set registry|settings\.json|install_requires"
    r"|postinstall",
    "command": r"\brm -rf\b|push --force(?!-with-lease)|\bsudo\b|chmod -r 777|\bdrop (?:schema|table|database)\b"
    r"|git clean -xdf|ufw disable|iptables -f|verify=false|permissions: write-all|\bdelete (?:ns|namespace)\b"
    r"|\biban\b|\bpix\b|\b(?:share|send|delete|transfer|upload|post|pay|grant|export|forward|wire)_[a-z_]*\(",
    "toolcall": r"\b(?:call|use|invoke|run)\s+(?:the\s+)?[\w.-]+\s+tool\b|\b(?:shell|exec|run|fetch|browse|bash|system|eval|call_?tool|tool)\w*\(\s*[\"']"
    r"|\btool\s*:|\bbrowser tool\b|\bemail tool\b|\bfetch tool\b|\bcall (?:the )?function\b|(?<=_)[a-z]+\((?=\s*(?:[a-z_]+\s*=|[\"']))",
    "lifted": r"autoapprove\"?\s*[:=]\s*true|confirm\w*\s*[:=]\s*(?:false|no|off)\b|safety_mode\s*=\s*off",
    # an AI named as a word, or in a field's name (agent_note:, x-agent-policy:, hinweis_fuer_agenten:, (agent))
    "named": r"(?<![a-z0-9_-])(?:ai|llm)s?(?![a-z0-9_-])",  # (where the text writes AI or LLM so: not Italian "ai")
    "ai": rf"(?<![\w-])(?:ии|ші)(?![\w-])|(?<![\w-]){_SETTING}[\w-]*[_-](?:agent|ai|assistant|llm|model|bot)[\w-]*[\"']?\s*[:=]"
    rf"|(?<![\w-]){_SETTING}(?:agent|ai|assistant|llm|model|bot)s?[_-][\w-]+[\"']?\s*[:=]|\((?:agents?|ai)\b",
    "agent": r"\b(?:if|when|whenever) (?:you(?:'re| are) |there(?:'s| is) )?(?:an?|the|your) (?:ai|agent|assistant|model|llm)\b|\b(?:assistant|agent|model|ai)s?\s+must\b|\b(?:ai|llm|assistant|agent|(?:(?<![a-z] )|(?<=the )|(?<=to ))model|bot)s?\s*(?:\([^)]{0,20}\))?\s*:|\bnote to (?:the )?(?:model|ai|assistant"
    r"|agent)|\bwhatever ai\b|\bai (?:agent|assistant|model)s?\b|\bagents? must\b|\bagent:|todo\(agent\)"
    r"|\bfor (?:the )?(?:ai|agent|assistant)s?\b|给ai|für ki|para el asistente|pour l'assistant"
    # (Chinese, Japanese, Korean: to … the AI, then a colon or comma: 给正在评分的AI：, AIアシスタントへ:, 비서님,)
    r"|(?<=[给对致向])[^:,。!?()\[\]【】 ]{0,12}? ?(?:ai|模型|助手|助理|代理|机器人|智能体|智能客服|记录员)[:,]|(?:^(?![给对致向])|(?<=[@。!?:,、(\[【 ]))"
    r"[\u3040-\u9fff\uac00-\ud7af]{0,8}(?:ai(?=님|さん|へ|에게|你好|您好)|模型|助手|助理|机器人|智能体|アシスタント|エージェント|에이전트"
    r"|어시스턴트|비서)(?:(?:님|さん|へ|에게|你好|您好)[:,)]?|:)",
}


_OPENING = r"\W*(?:(?:hey|hi|hello|ok|okay|dear)\W+)?"  # before an AI spoken to at a text's start: the user's voice
_VOCATIVE = r"[ \t]*[^\W\u3040-\u9fff\uac00-\ud7af]*[ \t]*[:,]|(?:[ \t]*[^\s.!?;:,。！？；：，]+){1,5}?[ \t]*:"  # AI, … / AI helpers: …
_CALLED = r"(?:^|[\[(<{>:;.!?—–*#|-] ?)(?:[^\s.!?:;,()]+ ){0,3}(?<!'s )(?<!\bmy )(?<!\bhis )(?<!\bher )(?<!\bour )(?<!\btheir )$"  # (FYI for the team bot, …)
_HEADING = r"(?:\w{0,3}|[^\W\u3040-\u9fff]{0,8})(?P<on>(?: [\w-]+){0,3}?)\s*(?:\([^)]{0,40}\)\s*)?([,:\]])"  # (for: …, [for …])
_MINE = r"(?<!\w)(?:my|me|mine|self|mon|ma|moi|mein\w*|mir|mich|mi|mio|mia|meu|minha|mí|мой|моя|мне|меня|我的|问我|私の|내)(?!\w)"
_I = _MINE + r"|(?<!\w)(?:i|we|our)(?!\w)|我|私"  # (the first person)
_SENTENCE = r"[.;!?。；！？](?:\s|$)|[；。！？]"  # (the end of a sentence)
_PROMPT_FOR = r"|prompt(?: [\w']+){0,3}? (?:for|of) (?:the |an? |our )?(?:[\w-]+ ){0,3}$"  # (for the HR bot: …)
_THING = r"\w(?:'s)? (?:token|prompt|config\w*|platform|framework|sdk|api|setting|setup|log|account|user)s?\b|\w的?(?:系统提示|提示词)"
_OWNED = {  # a person's assistant, not an AI spoken to: my assistant, the user's, 用户的助理; my writing assistant: …
    "reader": r"(?:my |'s |s' |[户我他她]的)$" + _PROMPT_FOR,
    "agent": r"(?<!\w)(?:my|our|mein\w*|mon|ma|mi|meu|minha|мой|моя)(?: [\w-]+){0,2} ?$|我[的给]$" + _PROMPT_FOR,
    "pubkey": r"(?:(?<!\w)(?:my|our|mein\w*|unser\w*|mon|notre|mi|nuestr\w*)(?!\w)|我|私の|내 )[^.;!?。\n]{0,80}?(?:key|schlüssel|clé|clave|公钥|公開鍵|키)[^.;!?。\n]{0,100}$",
}
_FOR = r"(?<!\w)(?:to|for|für|an|pour|à|au|aux|para|per|pro|pre|za|dla|для|до|voor|för|till|til|untuk|için|cho|kwa|all|any|every)(?!\w)|给|对|致|ถึง|ל"
_ACTS = SHAPES.keys() - {"agent", "ai", "named", "toreader", "account"}  # the shapes of what an act needs
_RISKY = _ACTS | {"goods", "prompt", "conceal", "authority", "grant"}  # what a permission may not name
_SCOPE = r"`[^`\n]+`|\((?:[^()\n\"'{}:,]{1,40},\s*){2,}[^()\n\"'{}:,]{1,40}\)"  # `pytest`, (ls, cat, git diff)


def _aside(spoken: str, h: "_Hit") -> bool:
    """An AI addressed by someone else than its user, for whom the text says it is ((per l'agente), Za AI asistenta:) — not
    a speaker's label (助手：好的) nor the user's own voice: no first person around it (my assistant, ask me)."""
    before = spoken[max(0, h.start - 25) : h.start + 1]  # (a bracket or a word for whom it is before it: not a speaker)
    said = not re.match(r"[\w ]*\)\W*$", spoken[h.end :])  # (something said to it, not a tag at the end: … (agent))
    mine = re.search(_MINE, spoken[max(0, h.start - 40) : h.end + 60])
    return said and not mine and bool(re.search(r"[(\[【<]|" + _FOR, before))


def _called(spoken: str, h: "_Hit") -> bool:
    """A reader called by its role at a clause's start: FYI for the team bot, …; [For assistants booking trips] …"""
    before = re.search(_CALLED, spoken[max(0, h.start - 40) : h.start])
    mark = re.match(_HEADING, spoken[h.end :])
    on = mark and mark["on"] and (mark[2] == "," or re.search(_MINE, mark["on"]))  # (not a comma after words, nor 'me')
    return bool(before and mark and not on and (mark[2] == "," or re.search(_FOR, before[0])))


def shaped(text: str) -> bool:
    """`text` holds a shape of what an act needs (a URL, a command, a tool's call …): it counts wherever it stands."""
    spoken = " ".join(text.casefold().split())
    return any(re.search(pattern, spoken, re.M) for concept, pattern in SHAPES.items() if concept in _ACTS)


def relayed(text: str) -> bool:
    """Someone else's words passed on: a source cited (according to, per, the page says, laut, 根据, によると …) —
    not the user nor the writer as that source (per the user's request, ユーザーによると, according to me)."""
    spoken = readings.spoken(text, text if text.isascii() else readings.forms(text)[1])
    hits = words(spoken)
    return any(
        h.concept == "relayed"
        and not any(u.concept == "user" and (0 <= u.start - h.end <= 6 or 0 <= h.start - u.end <= 3) for u in hits)
        and not re.match(rf"\W*(?:the )?(?:{_MINE})", spoken[h.end :])
        for h in hits
    )


class _Hit(NamedTuple):
    start: int
    end: int
    concept: str
    lang: str  # "" for a shape, which stands with any language


def find(
    spoken: str, found: "list[_Hit] | None" = None, named: bool = True, tool: bool = False, mine: bool = False
) -> str | None:
    """The first finding of `FINDINGS` whose concepts occur together in `spoken` (the table's words in it: `found`, if
    the caller has them), or None. `mine`: the user's own words, where no act is weighed (`FIRST_HAND`, docs/safety.md)."""
    hits = _affirmed(spoken, words(spoken) if found is None else found)
    hits += _overruled(hits)
    anchored = {h.concept for h in hits if h.lang == "*"} - (set() if named else {"named"})
    hits = [h for h in hits if h.lang != "*"] + [
        _Hit(m.start(), m.end(), c, "") for c in anchored for m in re.finditer(SHAPES[c], spoken, re.M)
    ]
    hits = [h for h in hits if not re.search(_OWNED.get(h.concept, "(?!)"), spoken[max(0, h.start - 160) : h.start])]
    hits = [h for h in hits if h.concept not in ("reader", "agent") or not re.match(_THING, spoken[h.end - 1 :])]
    yours = [y for y in hits if y.concept == "yours"]  # (the user's AI in someone else's words: your assistant)
    hits += [
        a._replace(concept="yourai")
        for a in hits
        if a.concept in ("agent", "reader") and any(-3 <= a.start - y.end and y.start - a.end <= 3 for y in yours)
    ]
    off = {h.start for h in hits if h.concept == "disarm"}  # (自动关闭: a manner, closes by itself — no standing order)
    hits = [h for h in hits if h.concept != "standing" or not off & {h.end, h.end + 1}]
    hits += [  # an AI named, then a comma or colon in its clause: spoken to (AI helpers: …, Assistant, …)
        h._replace(concept="opened" if h.concept != "ai" and re.fullmatch(_OPENING, spoken[: h.start]) else "addressed")
        for h in hits
        if h.concept in ("agent", "ai", "named")
        and (spoken[h.end - 1] in ":=," or spoken[h.start] == "(" or re.match(_VOCATIVE, spoken[h.end :]))
        or h.concept == "reader"
        and _called(spoken, h)
    ]
    if "meta" not in {h.concept for h in hits}:  # an AI spoken to inside the text, in no note about attacks
        hits += [h._replace(concept="aside") for h in hits if h.concept == "addressed" and _aside(spoken, h)]
    begun = m.end() if (m := re.match(_OPENING + r"(?:the |my |our )?", spoken)) else 0  # (the user's voice: AI, …)
    readers = [h for h in hits if h.concept in ("reader", "named", "agent")]
    begun = max([h.end for h in readers if h.start <= begun], default=-1)
    readers = [h for h in readers if h.start >= begun]  # AI helpers should …
    hits += [  # in the reader's clause (or after it called: AI, …), not a limit (should not / only …), an act in its sentence
        r._replace(concept="bidden")
        for r in hits
        if r.concept == "request"
        and any(
            0 <= r.start - a.end <= 40 and not re.search("[,;，；。.!?]", spoken[a.end + 1 : r.start]) for a in readers
        )
        and not re.match(r" ?(?:not|never|only|n't|不|别)", spoken[r.end : r.end + 6])
        and any(g.concept in _ASKED.split("|") and _beside(spoken, r, g, 80, _SENTENCE) for g in hits)
    ]
    by: dict[str, list[_Hit]] = {}
    for hit in (h for h in hits if h.concept != "toreader" or h.start >= begun):
        by.setdefault(hit.concept, []).append(hit)
    if (re.search(_SCOPE, spoken) or "first" in by) and by.keys().isdisjoint(_RISKY):  # a permission for what it names
        by.pop("unchecked", None), by.pop("unconfirmed", None)  # in code (`pytest` without asking)
    about = "meta" in by and "lifted" not in by  # a note about attacks: only the shapes of acts count
    if len(by) < 2 and by.keys().isdisjoint(_ALONE):
        return None  # (every finding but a shape's alone needs two concepts)
    findings = FIRST_HAND if mine and re.search(_I, spoken) else FINDINGS  # (the user's own rule, for their own things)
    for rule, needed in findings + (ORIGIN if tool and not about else ()):
        if about and len(needed) > 1 and not any(c in _ACTS for alt in needed for c in alt.split("|") if c in by):
            continue
        if not all(not by.keys().isdisjoint(alt.split("|")) for alt in needed):
            continue
        groups = [[h for c in alt.split("|") for h in by.get(c, ())] for alt in needed]
        # the words of one finding come from one language (shapes go with any)
        for lang in {h.lang for group in groups for h in group} if all(groups) else ():
            if _together([[h for h in group if h.lang in ("", lang)] for group in groups]):
                return rule
    return None


# A secret in prose: a word that names one (`credential`; `login` for the words that introduce one,
# which need a random-looking value) and, after it in its sentence, a value shaped like a secret —
# after the first link (`:`, `=`, a dash, a copula) if there is one, else right after the word.
PLACEHOLDER = (  # what stands for a secret, not one (also for rules' key = value)
    r"<[^>]*>|\$\{?[\w.:-]+\}?|\{\{.*\}\}|\{[\w.]*\}|%\(?\w*\)?s|[*x•.?#-]{3,}|…|none|null|nil|true|false|"
    r"undefined|string|str|bytes|required|optional|redacted|\[redacted\]|hidden|secret|123456(?:789?)?|(?:password|"
    r"passwd|pass|pwd|admin|changeme|qwerty|letmein|welcome|test|root|demo)(?:1|12|123|1234)?|example|your[_-]?\w*|\w+_here"
)
_LINK = r"(?<!\d)(?<!localhost):|[=：]|\s[—–-]+>?\s|\b(?:is|was|are|ist|lautet|es|est|era|é|è|là|adalah|to|är|er|jest|je|este)\b|是|为|は|는|은|है|هي"
_STOP = (  # words that point to a secret elsewhere, or speak about one
    r"reset|rotat|chang|expir|polic|manager|length|requir|hash|field|prompt|page|screen|ticket|error|charac|chars|"
    r"digit|minim|least|stored|saved|vault|1password|bitwarden|keepass|lastpass|keychain|generat|strength|hint|"
    r"format|example|like|such|weak|avoid|common|long|short|forgot|\bask\b|\bsee\b|contact|oubli|zurück|geändert|richtlinie|réinitialis|restablec|olvid|重置|修改|过期|策略|リセット|変更"
)
_NOT_SECRET = (  # names, placeholders, paths, addresses, dates, versions, tickets, hashes, quantities
    r"(?i:1password|bitwarden|keepass\w*|lastpass|keychain)|[\w.-]*\.(?:[a-z]{2,4}|local|internal|cluster|corp)|[/~%{<\[(&*#|^@].*|\$\{.*|\$[A-Z_][A-Z0-9_]*|[A-Z0-9]+(?:_[A-Z0-9]+)+|[\w.+-]+@[\w-]+\.[\w.-]+|\w+://\S*|\d{4}-\d\d(?:-\d\d\S*)?|(?:localhost|[\d.]+|[\w-]+(?:\.[\w-]+)+):\d{2,5}"
    r"|\d{1,2}[:.]\d\d(?:[:.]\d\d)?|[A-Z]{2,}[#-]?\d{1,5}|[vV]?\d+(?:\.\d+)+\S*|[A-Z]{2,10}-\d+|[0-9a-f]{12,}|\d+(?:ms|s|h|d|px|k[bm]?|mb|gb|x|%)"
    r"|(?i:sha|md|base|utf|ipv|http|oauth|tls|ssl|wpa|aes|rsa|ed|x|amd|arm|win|ios|py|python|node|php|es|v)\d+[\w.-]*"
    r"|[a-z]?[A-Z]{2,}[a-z]{0,3}\d{1,2}|.*%(?:[2-7][0-9A-Fa-f]|0[aAdD]|[-.\d]*l?[sdifxcXF](?![A-Za-z])).*"  # SOCKSv5, IPv6; %0A, %20, %s (not %01)
    r"|[a-z]+(?:_[a-z0-9]+){2,}|.*[()\[\]{}<>\"'`=|].*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # code
)


def credential(spoken: str, wide: str, text: str, hits: list[_Hit]) -> str | None:
    """A word naming a password, PIN, passphrase, recovery code, seed or login, in any language of
    the table, followed in its sentence by a value shaped like a secret (`secret_shaped`) — not a pointer
    to one (in 1Password, reset, rotated …), a placeholder, a name or a number of things."""
    locks = [h for h in hits if h.concept == "lock"]
    for h in hits:
        word, after, end = spoken[h.start : h.end], spoken[h.end : h.end + 1], h.end
        if h.concept == "code":  # a code next to a lock (door code, code de la porte): a PIN's name
            lock = next((k for k in locks if _beside(spoken, k, h, 30) and not after.isalpha()), None)
            h, end = (h._replace(concept="credential"), max(h.end, lock.end)) if lock else (h, 0)
        if h.concept in ("goods", "login") and _named_key(spoken, wide, h):
            return "labelled_secret"
        if h.concept not in ("credential", "login", "seed") or spoken[h.start - 1 : h.start] in tuple("_:/@.=<{$"):
            continue  # (inside a name, a URL or a placeholder: db_password, user:password@, <password>)
        rest = spoken[end : end + 200]
        if _spaced(word[0]):  # the rest of a word (şifrem, codes) or a compound (pin-eingabe)
            if after in ("_", "@") or (len(word) <= 4 and word.isascii() and after.isalnum() and end == h.end):
                continue  # a short word counts whole: pin, not ping; pass, not passport
            rest = re.sub(r"^[^\W\d_]*(?:-[^\W\d_]+)*", "", rest)
        seed = re.search(r"(?<![a-z])((?:[a-z]{3,8} ){11,}[a-z]{3,8})\b", rest[:300])  # a wallet's words
        if seed and seed.start() <= 50 and len(set(seed[1].split()) & _COMMON) <= 1:
            return "seed_phrase"
        window = re.sub(_TEMPLATE, lambda m: " " * len(m[0]), re.split(r"[.。!?！？;；](?:\s|$)", rest[:80])[0])
        if re.search(PUBLIC, re.split(r"[.。!?！？;；](?:\s|$)", rest[:160])[0]):
            continue  # (its sentence says it is published: shown on the public page, an example)
        said, before = re.match(r"\W*(\w[\w.-]*)", window), spoken[max(0, h.start - 80) : h.start]
        own = said and re.search(rf"(?<![\w.-]){re.escape(said[1])}\W+$", before[-40:])
        if own and re.search(_LOCAL, before + rest[:80]):
            continue  # (the user's name as its password, on this machine: a local default, as url_credentials takes)
        start = link.end() if (link := re.search(_LINK, window)) else 0
        if link and (
            re.search(_STOP, window[:start])
            and link[0] != "to"
            or re.search(r"[\"`,;{}()|]|'(?!\w)|(?<!\w)'", re.sub(r"\s\([^()\n]{1,60}\)", "", window[:start]))
        ):
            start = len(window)  # (a pointer, a list or code before the link: reset … is, f('password', 64))
        quoted = re.match(r"\s*[\"'“‘«](\w[\w !#$%&*+,.@^~-]{11,79})[\"'”’»]", window[start:])  # a passphrase of words
        if h.concept == "credential" and quoted and len(quoted[1].split()) >= 3 and not re.search(_STOP, quoted[1]):
            return "credential_in_prose"
        tokens, values = list(re.finditer(_TOKEN, window)), list(re.compile(_TOKEN).finditer(window, start))[:4]
        firsts = {m.start() for m in tokens[:1] + values[:1]}  # right after the word or the link
        for m in (tokens[:1] if link and tokens and tokens[0].end() <= link.start() else []) + values:
            if h.concept == "seed" or re.search(_STOP, window[min(start, m.start()) : m.end()]):
                if m.start() < start:
                    continue  # (the word right after it, before the link: the rest may still hold one)
                break
            token = m[0].strip("\"'`“”‘’«»").rstrip(".,;:)]}([{")
            found = re.search(re.escape(token), wide, re.I) if token else None
            if word in ("pin", "otp", "pw", "pwd") and found and found[0].isdigit() != word.startswith(("pin", "otp")):
                continue  # (to pin a version: only a number is a PIN; a name's pw 64020 is its uid)
            if found and secret_shaped(found[0], h.concept == "credential", m.start() in firsts, found[0] in text):
                return "credential_in_prose"
    return None


_CLAUSE = r"[.,;:!?。，；：！？、\n—–]"  # (a denied check's denial is denied within its clause: `_affirmed`)
_LOCAL = r"(?<![\w.-])(?:localhost|127\.\d+\.\d+\.\d+|\[?::1\]?)(?![\w.-])"
PUBLIC = r"(?<![\w.@-])(?:public(?:ly)?|demo)(?![\w@-]|\.\w)|公开|公開"  # a login its sentence says is published (a demo tenant's)
SHOWN = r"ssh-(?:ed25519|rsa|dss|ecdsa)|\b(?i:sha\d+|md5):|fingerprint|public|\bpub\b|checksum|digest|hash|example|sample|placeholder|dummy|fake|revoked|rotated|masked|redacted|公钥|指纹|示例|公開鍵|例"


def _named_key(spoken: str, wide: str, h: _Hit) -> bool:
    """A key (`random_key`) in the clause after a word naming a secret (the table's goods and
    logins, in any language), before a word saying it is none (`SHOWN`: public, a fingerprint, an
    example, revoked …); URLs and addresses left out."""
    clause = re.sub(r"\w+://\S*|\S+@\S+", " ", re.split(r"[.。!?！？;；](?:\s|$)", spoken[h.end : h.end + 160])[0])
    for m in re.finditer(r"[^\s:=：,;\"'`()（）<>\[\]{}|]{16,}", re.split(SHOWN, clause)[0]):
        if (found := re.search(re.escape(m[0]), wide, re.I)) and random_key(found[0]):
            return True
    return False


PUBLISHED = (  # keys their vendors publish for all to quote: Stripe's test key, jwt.io's sample, AWS's pair, Azure's emulators'
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ "
    "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw== C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="
).split()


def random_key(token: str, named: bool = False) -> bool:
    """Random enough to be a key: 16 characters or more, ten distinct, two digits, upper and lower
    case (or 32 or more of one case: not an id such as 01KQH…), 3.5 bits a character or more; not a
    path, URL or example. Where a name right before it says it is a key (`named`), hexadecimal counts
    (32 or more) and so do words in it; else a hash or an id is no key, nor camelCaseWords."""
    plain = token.rstrip(".:=")
    if re.fullmatch(r"(?:0x)?[0-9a-fA-F]+", plain):
        return named and len(plain) >= 32
    kinds = [bool(re.search(c, plain)) for c in ("[a-z]", "[A-Z]")]
    return (
        len(plain) >= 16
        and len(set(plain)) >= 10
        and sum(c.isdigit() for c in plain) >= 2
        and (all(kinds) or len(plain) >= 32)
        and not re.search(r"(?:^|/)[a-z._-]+/|(?-i:_[A-Z]+_)|example|^[a-z]+://|^(?:sha\d+|md5):", plain, re.I)
        and (named or sum(map(len, re.findall("[A-Z]?[a-z]{3,}", plain))) * 2 < len(plain))
        and -sum(n / len(plain) * math.log2(n / len(plain)) for n in Counter(plain).values()) >= 3.5
        and not any(v in plain for v in PUBLISHED)
    )


_DRAWN = r"(?=(?:[a-z]*[A-Z]){2})(?=(?:[A-Z]*[a-z]){2})(?!(?:[A-Z]+(?=[A-Z][a-z]))?(?:[a-z]?|[a-z]*[aeiouy][a-z]*)(?:[AEIOUY][a-z]+|[A-Z][a-z]|[A-Z][a-z]*[aeiouy][a-z]*)*[A-Z]*$)[A-Za-z]{8,64}"  # LydjSmmcNdrv, not SharePoint
_TEMPLATE = r"\{\{.*?\}\}|\{%.*?%\}|<%.*?%>|\$\{[^}]*\}"  # filled in later: a reference, not a value
_TOKEN = r"[!-~]+"  # (a value is written in ASCII; a word of another script ends it)
_COMMON = set("the and for are not with you this that from have was but our its they will into then than when".split())


def secret_shaped(token: str, strong: bool, first: bool, plain: bool = True) -> bool:
    """Shaped like a secret: after a password's name, six characters or more with a letter and a digit or sign (or
    right after it four to twelve digits: a PIN, or eight letters or more of both cases drawn at random, not camelCase
    words); after a login's, eight or more of three kinds with a part that is no word (Wp#x92kLq, not ACME-Prod-2024);
    ten or more of all four kinds whatever signs they hold (*M^r4gSdy1U, KL3Xt=&iJ6), but no URL, address, template,
    call or assignment (API_KEY=…)."""
    mixed = len(token) >= 10 and all(re.search(c, token) for c in ("[a-z]", "[A-Z]", r"\d", r"[^\w/:]"))
    mixed = mixed and not re.search(r"^[<{]|\$\{|\{\{|://|^[A-Z_]+=|\w[(\[]|^[\w.+-]+@[\w-]+\.[\w.-]+$", token)
    if plain and not mixed and (re.fullmatch(_NOT_SECRET, token) or re.fullmatch(PLACEHOLDER, token, re.I)):
        return False  # (＄ecret: written so)
    if token.isdigit() or re.fullmatch(r"\d{3,8}(?:-\d{3,8})+", token):  # a PIN; recovery codes 4829-1032
        return strong and first and 4 <= len(token) <= 64 and not re.fullmatch(r"(?:19|20)\d\d", token)
    letter, digit = re.search("[A-Za-z]", token), re.search(r"\d", token)
    if strong:
        sign = re.search(r"[!#$%&*+=?@^~|]", token) and token.lower() != token != token.upper()  # (not mongodb+srv)
        return len(token) >= 6 and bool(letter) and bool(digit or sign) or first and bool(re.fullmatch(_DRAWN, token))
    kinds = sum(bool(re.search(c, token)) for c in ("[a-z]", "[A-Z]", r"\d", "[^A-Za-z0-9]"))
    words = r"[A-Z]?[a-z]{2,}|[A-Z]{2,}|\d+|"
    return len(token) >= 8 and kinds >= 3 and any(not re.fullmatch(words, c) for c in re.split("[^A-Za-z0-9]+", token))


def _affirmed(spoken: str, hits: list[_Hit]) -> list[_Hit]:
    """`hits` without the negations and the acts they deny: an act (`DENIABLE`) with a negation of its language (`no`)
    beside it — at most `GAP` characters apart, no clause mark between, on either side (没有任何密钥泄露, zeige niemals,
    表示しないで). A negation that is part of another concept's words (`do not tell`, 不要告诉, ไม่ต้องถาม) is that
    concept's. A denied check (`FLIPS`) whose denial is itself denied — a negation before it in its clause, an act
    between (never deploy … without the user's approval, 不要在没有用户确认的情况下…) — is a check the text requires.
    Negations side by side are one (nigdy nie mów: never say)."""
    nos = [
        n
        for n in hits
        if n.concept == "no"
        and all(h.concept == "no" or h[:2] == n[:2] or not h.start <= n.start < n.end <= h.end for h in hits)
    ]
    withouts = [h for h in hits if h.concept == "without"]  # (denies no act: "run it without asking")
    kept = []
    for h in hits:
        gap = 2 * GAP if h.concept == "unchecked" else GAP  # (a skip denied is a check: never … without asking)
        if h.concept in ("no", "without") or (
            h.concept in DENIABLE | {"unchecked"} and any(n.lang == h.lang and _beside(spoken, n, h, gap) for n in nos)
        ):
            continue
        if h.concept in FLIPS:  # (a word of any language: denied by a negation of any, a clause's width apart)
            denials = [n for n in nos + withouts if _beside(spoken, n, h, 2 * GAP)]
            d = min(denials, key=lambda n: abs(n.start - h.start)).start if denials else -1
            between = [spoken[n.end : d] for n in nos if n.end <= d]
            if d < 0 or any(re.search(r"\w", b) and len(b) <= 4 * GAP and not re.search(_CLAUSE, b) for b in between):
                continue  # (no denial, or a denial itself denied: a check the text requires)
            h = h._replace(concept=FLIPS[h.concept])
        kept.append(h)
    return kept


def _overruled(hits: list[_Hit]) -> list[_Hit]:
    """The user overruled: a dismissal followed within 40 characters by the user (ignore the user's settings, ignoruj
    prośby użytkownika) — not the user's own (the user asked me to ignore …), not a password forgotten (忘记密码的用户)."""
    kept = {h.start for h in hits if h.concept in ("goods", "credential")}
    no = [d for d in hits if d.concept == "dismiss" and not kept & set(range(d.end, d.end + 4))]
    return [
        u._replace(concept="overruled")
        for u in hits
        if u.concept == "user" and any(0 <= u.start - d.end <= 40 for d in no)
    ]


def _beside(spoken: str, a: _Hit, b: _Hit, gap: int = GAP, marks: str = r"[.,;:!?。，；：！？、\n]") -> bool:
    between = spoken[min(a.end, b.end) : max(a.start, b.start)]
    return len(between) <= gap and not re.search(marks, between)


def _together(groups: list[list[_Hit]]) -> bool:
    """One hit of each group, all within `WINDOW` characters of the first group's hit."""
    return any(all(any(0 < abs(h.start - a.start) <= WINDOW for h in group) for group in groups[1:]) for a in groups[0])


def words(spoken: str) -> list[_Hit]:
    hits = []
    for end, (word, meanings) in _automaton().iter(spoken):
        start = end - len(word) + 1
        if _spaced(word[0]) and start and (_spaced(spoken[start - 1]) or spoken[start - 1].isdigit()):
            continue  # inside a word: a word of a script written with spaces counts at its start
        hits += [_Hit(start, end + 1, concept, lang) for lang, concept in meanings]
    return hits


def _spaced(c: str) -> bool:
    """A script whose words stand apart (not Chinese, Japanese, Thai, Arabic, Hebrew …)."""
    return c.isalpha() and not ("\u0590" <= c <= "\u08ff" or "\u0e00" <= c <= "\u0eff" or c >= "\u3000")


@functools.cache
def _automaton() -> "ahocorasick.Automaton":
    """The words of `TABLE` and `ANCHORS` (NFKC, case-folded, as the spoken reading has them) →
    (language, concept), built on the first text a process scans."""
    import ahocorasick

    words: dict[str, set[tuple[str, str]]] = {}
    rows = [row.split() for row in TABLE.strip().splitlines()]
    rows += [["*", concept, *anchors.split()] for concept, anchors in ANCHORS.items()]
    for lang, concept, *stems in rows:
        for stem in stems:  # ("any": words that go with any language's)
            word = unicodedata.normalize("NFKC", stem.replace("~", " ")).casefold()
            words.setdefault(word, set()).add(("" if lang == "any" else lang, concept))
    automaton = ahocorasick.Automaton()
    for word, meanings in words.items():
        automaton.add_word(word, (word, tuple(sorted(meanings))))  # (sorted: the same finding whatever the hash seed)
    automaton.make_automaton()
    return automaton
