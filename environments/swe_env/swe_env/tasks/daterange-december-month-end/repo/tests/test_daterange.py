from datetime import date

import pytest

from daterange import DateRange, month_end, month_start, parse_range


def test_len_and_iteration():
    r = DateRange(date(2024, 3, 1), date(2024, 3, 4))
    assert len(r) == 3
    assert list(r) == [date(2024, 3, 1), date(2024, 3, 2), date(2024, 3, 3)]


def test_contains_is_end_exclusive():
    r = DateRange(date(2024, 3, 1), date(2024, 3, 4))
    assert date(2024, 3, 1) in r and date(2024, 3, 4) not in r


def test_reversed_range_is_rejected():
    with pytest.raises(ValueError):
        DateRange(date(2024, 3, 2), date(2024, 3, 1))


def test_step():
    r = DateRange(date(2024, 1, 1), date(2024, 1, 8))
    assert list(r.days(step=3)) == [date(2024, 1, 1), date(2024, 1, 4), date(2024, 1, 7)]
    with pytest.raises(ValueError):
        list(r.days(step=0))


def test_overlap():
    a = DateRange(date(2024, 1, 1), date(2024, 1, 10))
    b = DateRange(date(2024, 1, 5), date(2024, 1, 20))
    assert a.overlap(b) == DateRange(date(2024, 1, 5), date(2024, 1, 10))
    assert a.overlap(DateRange(date(2024, 1, 10), date(2024, 1, 11))) is None


def test_business_days():
    # 2024-01-01 is a Monday
    assert DateRange(date(2024, 1, 1), date(2024, 1, 8)).business_days() == 5


def test_month_start_and_end_mid_year():
    assert month_start(date(2024, 2, 17)) == date(2024, 2, 1)
    assert month_end(date(2024, 2, 17)) == date(2024, 2, 29)
    assert month_end(date(2023, 4, 30)) == date(2023, 4, 30)


def test_parse_range():
    assert parse_range("2024-01-05..2024-02-01") == DateRange(date(2024, 1, 5), date(2024, 2, 1))
    with pytest.raises(ValueError):
        parse_range("2024-01-05")
