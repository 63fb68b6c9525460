from iniparse import parse, resolve


def test_value_keeps_equals_signs():
    data = parse("[db]\nurl = postgres://u@h/db?sslmode=require&x=1\n")
    assert data["db"]["url"] == "postgres://u@h/db?sslmode=require&x=1"


def test_value_with_colon_after_equals():
    data = parse("[web]\nendpoint = http://localhost:8000/api\n")
    assert data["web"]["endpoint"] == "http://localhost:8000/api"


def test_colon_separator_value_with_equals():
    data = parse("[opts]\nflags: --level=3 --mode=fast\n")
    assert data["opts"]["flags"] == "--level=3 --mode=fast"


def test_reference_into_url():
    data = parse("[svc]\nhost = h:9000\nurl = http://${host}/x?a=b\n")
    assert resolve(data, "svc", "url") == "http://h:9000/x?a=b"


def test_plain_values_unchanged():
    data = parse("[a]\nk = v\n")
    assert data["a"]["k"] == "v"
