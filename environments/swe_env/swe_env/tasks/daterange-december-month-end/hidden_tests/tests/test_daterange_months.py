from datetime import date

from daterange import DateRange, month_end, month_range


def test_month_end_in_december():
    assert month_end(date(2023, 12, 5)) == date(2023, 12, 31)


def test_month_range_december():
    r = month_range(2024, 12)
    assert r.start == date(2024, 12, 1) and r.end == date(2025, 1, 1)
    assert len(r) == 31


def test_split_by_month_across_new_year():
    r = DateRange(date(2023, 12, 20), date(2024, 1, 10))
    assert r.split_by_month() == [
        DateRange(date(2023, 12, 20), date(2024, 1, 1)),
        DateRange(date(2024, 1, 1), date(2024, 1, 10)),
    ]


def test_split_by_month_within_one_month():
    r = DateRange(date(2024, 5, 3), date(2024, 5, 9))
    assert r.split_by_month() == [r]


def test_month_range_february_leap_year():
    assert len(month_range(2024, 2)) == 29
