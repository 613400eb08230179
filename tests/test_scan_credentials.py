"""Secrets written in prose, in any language of the concept table, and vendor tokens no rule names
(optmem.safety.languages: the `credential` concept beside a value shaped like a secret; a
random-looking token with a vendor's prefix) — and the notes about passwords that hold none.
All keys here are made up."""

from __future__ import annotations

import pytest

from optmem.safety import languages, scan


@pytest.mark.parametrize(
    "text",
    [
        "my Apple ID password is Sunny-Day42",
        "the VPN password for the office is vpn!Office2024",
        "WordPress admin login: admin / Wp#x92kLq",
        "2FA recovery codes: 8f3k-29dj 7hd2-kq8s 1mz9-44pa",
        "the wallet seed phrase is abandon ability able about above absent absorb abstract absurd abuse access acid",
        "GPG passphrase tr0mb0ne-Velvet-88, the key expires next year",
        "alarm code 4821, ring twice",
        "Online-Banking PIN ist 48213, TAN per App",
        "Mon mot de passe Netflix est soleil2024!",
        "La contraseña del router es Gato_Negro77",
        "银行卡的取款密码是 482913",
        "銀行の暗証番号は 4821 です",
        "현관 도어락 비밀번호 4821 입니다",
        "пароль от почты — Kot-Vasya1987",
        "a senha do wifi é Casa#2024verde",
        "la password della banca è Roma!1979",
        "E-devlet şifrem Ankara.06tr",
        "hasło do poczty to Kwiatek#55",
        "de pincode van de pinpas is 4821",
        "mật khẩu wifi là Nha@2024xanh",
        "kata sandi email saya adalah Merdeka45!",
        "كلمة المرور للبريد هي Qamar#2020",
        "बैंक का पासवर्ड है Dilli@1947x",
        "Die PIN der Karte lautet 4821",
        "Mã PIN thẻ là 4821",
        "الرقم السري للبطاقة هو 4821",
        "Το κωδικός του wifi είναι Athina2020!",
        "Nenosiri ya wifi ni Nairobi2020!",
        "测试环境登录：zhangwei / Zw_8823#test",
        "vpn: username dsmith, pass Wint3r!sC0ming",
        "the Jenkins admin password got rotated to qW7$zN3p@Lk8, update the wiki",
        "Kod do alarmu: 4431",
        "code de la porte: 4821",
        "Garage door keypad: 1357",
        "The Wi-Fi password at grandma's is Sunflower#88",
        "2FA backup codes: 4829-1032 7741-0923",
        "GPG passphrase is 'purple monkey dishwasher 42'",
        "Grafana service account glsa_Zx81kQp0LmN3vB7cR2tY9wE4uI6oP1aS_4f2b9c1d",
        "Vault root token hvs.CAESIJx8Kd92LmQp0Zr7TbW3yFh5NvG1sUeA",
        "Doppler service token dp.st.prd.Ab3dE5gH7jK9mN1pQ3sT5vX7zB9dF1hJ3",
        '<add key="StorageKey" value="sWJZ++JrJ1v8vg9P4VurST9/3ymjsgu23mr5h1o9K0V9poJxYqZ0zRgHEKAD3f/GZYairHMe9f" />',
        # a login written as user / password where a login is spoken of (issue 46)
        "Office NAS web page http://10.0.0.5 (admin account): admin / xQ7vLp2mZk9, changed after setup.",
        "Netflix for the cabin TV is ana.r@example.org / 7hV*qL2m_Zp if you want to sign in.",
        "Cloud console keys - AppKeyId: Q3ZT9K2LMV8XW4RB AppKeySecret: Zq8vN2rT5wXy7LkP3mHs9BdF",  # camelCase names
        "staging DB パスワード: Kp7wQz2Lm9Xs(ユーザー app)",  # a value, then what it is for in brackets
        "DB password is s3cr3t-X9 on localhost:5432",  # (an address beside it takes nothing away)
        "비밀번호: 4821",
        "wifi password: qwerty2024",  # (a common word, then no common run of digits)
        "router admin password: 1234567",  # (123456 and one more digit is no common password)
    ],
)
def test_a_secret_in_prose_or_an_unnamed_vendor_token_is_refused(text):
    rule = scan.find(text)
    assert rule and scan.kind_of(rule) == "secret", rule


@pytest.mark.parametrize(
    "text",
    [
        "the wifi password is on the fridge",
        "reset my Apple ID password today",
        "密码在 1Password 里",
        "パスワードは 1Password に保存してあります",
        "Das WLAN-Passwort steht auf der Rückseite des Routers.",
        "El PIN de la tarjeta lo tiene Marta.",
        "password must be at least 12 characters and contain 1 symbol",
        "VPN password rotated on 2024-05-03, the new one is in the vault",
        "Apple ID password: see 1Password (Personal vault)",
        "The door code changed; ask the front desk.",
        "set DB_PASSWORD in .env, never commit it",
        "password: ${DB_PASSWORD}",
        "PIN: ****",
        "password: changeme (the default, forced to change on first login)",
        "login: <username> / <password>",
        "2FA recovery codes are printed and in the safe at home",
        "passwordless login via WebAuthn since v2.3.1",
        "Die PIN-Eingabe schlägt fehl mit Fehler E4021 (Ticket 48213).",
        "Login page returns 502 since deploy 7f3a2c1, see INC-2291",
        "mot de passe oublié : le lien de réinitialisation expire après 24h",
        "seed phrase: never store it digitally; write it on paper",
        "access code for the conference call is in the calendar invite",
        "the password hash is bcrypt with cost 12, upgraded from sha256 in v4",
        "Kennwort für das Testkonto steht in KeePass unter Projekte/QA2024",
        "ULID 01HV3K9Z8N2Q4R6T8W0Y2A4C6E and UUID 3f2a9c0d-1e4b-4a69-8c1d-2e3f4a5b6c7d",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed the login redirect",
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "spec https://drive.google.com/file/d/1aBcD3fGhIjKlMnOpQrStUvWxYz012345/view",
        "nanoid ids look like V1StGXR8_Z5jdHi6B-myT in the orders table",
        "build artefact build-2024-05-03T10-30-00Z-linux-amd64 uploaded",
        "test name test_login_with_expired_password_returns_401 is flaky",
        "Don't use passwords like Summer2024! — they are in every wordlist",
        "the login node is hpc-login01.cluster.local",
        "error code 4821 on the garage door opener",
        "password in a mongodb+srv URL",
        "CODEOWNERS entry for /billing → @dpatel, per Maria's handoff.",
        'password for prod: "ask Dana on Slack"',
        'the password prompt says "Enter your password here"',
        "部门电话号码 12345678",
        "문제 번호 1234",
        "Ticket code 4412 for the safe deposit",
        "Username or password is too long for SOCKSv5 protocol.",
        "用户名或密码对于 SOCKSv5 协议太长。",
        "Note: This passphrase has never been changed.%0APlease change it now.",
        "pin the Windows runner to windows-2019",
        "scrypt('password', 'salt', 64, { N: 1024 }, callback)",
        "password=parts['password'], host=host, port=parts['port']",
        "Пароль должен быть не короче 12 символов; 密码长度至少 12 位",
        "Stripe charge ch_3MmlLrLkdIwHu7ix0snN0B15 refunded; message msg_01XFDUDYJgAACzvnptvVoYEL",
        "integrity sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC",
        "MLKEM768X25519PrivateKey = rust_openssl.hpke.MLKEM768X25519PrivateKey",
        # a template expression is a reference to a value, filled in later, not the value
        "the chart's secret: password: {{ .Values.db.password | b64enc }}",
        "db password is {{ vault_db_password | default(omit) }} in the playbook",
        "ERB config: password: <%= pg_pass_v2 %>",
        "Jinja: pin {% if env == 'prod4' %} required {% endif %}",
        # a sample password (Passw0rd! reads as "password"), and pairs that are no login
        "Seed user for the e2e tests: tester@example.com / Passw0rd!",
        "We grant read / write access to Dev / Prod after review.",
        # an address's port is no PIN, and its colon no link to a value (a server with no password)
        "테스트용 MySQL은 비밀번호 없이 localhost:3306에서만 쓴다.",
        "Die lokale Datenbank läuft ohne Passwort auf localhost:5432.",
        # the commonest passwords, as fixtures and defaults name them, guard nothing
        "Test user in the fixtures logs in with the password 'password123'",
        "the e2e login is qa-bot with password admin123",
        "Local Jenkins: user admin, password admin1234",
        "开发机上的 Redis 密码是 123456，只在内网用。",  # (the commonest of all, and its longer runs)
        "Kiosk demo account: demo / demo123 (the vendor prints it on the box).",
    ],
)
def test_a_note_about_a_password_without_one_passes(text):
    assert scan.find(text) is None


def test_the_credential_concept_is_in_every_language_of_the_table():
    rows = [row.split() for row in languages.TABLE.strip().splitlines()]
    langs = {lang for lang, *_ in rows} - {"any"}  # ("any": words that go with every language)
    credential = {lang for lang, concept, *_ in rows if concept == "credential"}
    assert len(langs) >= 33 and credential == langs  # (and Malay, whose words the Indonesian rows hold)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # a payment card's number (its Luhn check digit right) with its expiry or its code, in any language
        ("Visa for the team's travel bookings: 4929 3817 6620 4519, exp 11/28, CVV 312", True),
        ("Firmenkarte 5425 2334 3010 9903 gültig bis 08/30", True),
        ("公司卡 6212 2600 1234 5675，有效期 09/29，安全码 471", True),
        ("card 4929381766204519 cvc 312", True),
        # a test card (few distinct digits, or said so), a check digit wrong, a bank account with no expiry or code
        ("Stripe test card 4242 4242 4242 4242, exp 12/34, CVC 123", False),
        ("QA card 4000 0566 5566 5556 exp 01/30 cvv 999 (sandbox test number)", False),
        ("ref 4929 3817 6620 4518 on 11/28, see ticket", False),
        ("收款账户：招商银行 6225 8801 2345 6789，户名刘洋", False),
        # an export's table: the value under the password's column is one
        ("name,url,username,password\nBank,https://bank.example.co.uk,jo.k,walnut.7720!", True),
        ("title;login;passwort\nMail;jo@example.de;Kiefer#4471x", True),
        ('"name","password"\n"router","Tq9#vL2xWm"', True),
        # the column holds no password (masked, empty, a placeholder), or the word is no column's name
        ("name,url,username,password\nBank,https://bank.example.co.uk,jo.k,********", False),
        ("name,url,username,password\nBank,https://bank.example.co.uk,jo.k,", False),
        ("Reset your password\nthen sign in again with the new one (at least 12 characters)", False),
        # where a value begins: an aside in brackets between the word and its link is no list
        ("Das Passwort für den Server (intern, User 'ops') lautet h5TRq!mxWz2p", True),
        ("the password for the shared box (jo@birchmail.net) = Birch.5521walnut", True),
        # a name, a version, an address: no value
        ("the wifi password: WPA2 since v5.2.0 of the firmware", False),
        ("本地 Redis 没密码，redis://127.0.0.1:6379/0 直接连。", False),
        ("Die Passwortrichtlinie (BSI, Stand 2024) ist im Wiki", False),
        # Spanish "clave" names a password as "contraseña" does, with a value shaped like one after it
        ("la clave del correo del trabajo es Limon.8812verde", True),
        ("la clave del éxito es la constancia", False),
        # a bare "key" (key1, key for …) before a key: hexadecimal of 32 or more counts, as after any key's name
        ("endpoint https://speech-westeu.cognitive.azure.com/ and key1 = 3f9a1c7e5b2d4f60a8e1c3b5d7f9a2c4", True),
        ("wallet key for the bot: 0x8b1f3e5a7c9d2b4f6e8a0c2d4f6b8e1a3c5d7f9b2e4a6c8d0f2b4e6a8c1d3f5b", True),
        ("My minisign public key, share it freely: RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3", False),
        ("the captcha test site key 6LeIxAcTAAAAAJcZVRqyHh71UMIEGNQ_MXjiZKhI always passes", False),
        # the storage emulators' keys Azure publishes for all to quote (as AWS's example pair); any other key is one
        (
            "Azurite: DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlm"
            "EtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
            False,
        ),
        (
            "prod: DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey=Fby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OU"
            "zFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
            True,
        ),
        # review21: a number named as something else than a card, beside a date, is no card
        ("New phone IMEI 490154203237518, bought 03/24 at the Apple store", False),
        ("Samsung IMEI: 356938035643809 (warranty until 06/27)", False),
        ("Order 4027 1835 0291 8431 ships 12/09", False),
        ("Amazon order #4027183502918431 delivered on 11/28", False),
        # a password column that says the password's state, not the password
        ("user,password\nalice,reset-required\nbob,expired-2024", False),
        ("account,password,status\nalice,changed 2024-03-01,ok", False),
        ("app,password\nmail,rotated-Q3", False),
        ("system,password\nvpn,see 1Password vault entry VPN-2024", False),
        # a bare key that names a cache's, a sort's, a commit's or a checksum's
        ("Cache key 7c9e6679-7425-40de-944b-e07fc1f97f51 for the dashboard query", False),
        ("key 5f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f is the md5 of the release tarball", False),
        ("Sort key: evt_01HF3K2M9XQ8Z7P6N5R4T3W2V1 is the first event", False),
        ("commit key 3e1f5a7c9b2d4e6f8a0c1e3f5a7b9c2d4e6f8a0e", False),
    ],
)
def test_a_secret_by_its_mechanism_and_what_only_looks_like_one(text, secret):
    rule = scan.find(text)
    assert (rule is not None and scan.kind_of(rule) == "secret") is secret, rule
