"""Regenerate the bundled example sessions in assets/examples/ (one or more per domain).

The observations are hand-written, not model output. They still go through the real
session path (Session + World + a ScriptedBackend streaming the written answers, then
TrajectoryWriter), so every file has the prompts, system prompt, tools and parse results
a real session would record. Timings and token counts are left empty (nothing was
measured) and timestamps are fixed, so re-running the script gives the same files.

    python assets/examples/make_examples.py            # writes assets/examples/*.jsonl
    python assets/examples/make_examples.py --check    # fails if a file is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from agentworld_local.domains import get_domain
from agentworld_local.engine.prompt_composition import with_session_tools
from agentworld_local.engine.settings import SessionSettings
from agentworld_local.engine.types import SamplingConfig, ThinkBudget
from agentworld_local.engine.world import World
from agentworld_local.scenarios.loader import load_scenario
from agentworld_local.session.core import Session
from agentworld_local.session.header import header_for
from agentworld_local.engine.scripted import ScriptedAnswer, ScriptedBackend
from agentworld_local.trajectory.reader import read_trajectory
from agentworld_local.trajectory import writer as writer_module
from agentworld_local.trajectory.writer import TrajectoryWriter

OUT_DIR = Path(__file__).resolve().parent  # the script lives next to what it makes
NOTE = "Hand-written example session for offline demos (`awl demo`, `awl replay`); it is not model output."
CREATED = "2026-12-02T12:00:00Z"
UNDO = None  # a step that undoes the last turn


@dataclass
class Step:
    action: str
    thinking: str
    observation: str


@dataclass
class Example:
    name: str  # file stem
    scenario: str
    steps: list[Step | None] = field(default_factory=list)  # None: undo


def answer(step: Step) -> str:
    return f"<think>\n{step.thinking.strip()}\n</think>\n\n<predicted_observation>\n{step.observation.strip(chr(10))}\n</predicted_observation>"


def as_json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


# -- swe ---------------------------------------------------------------------------------

TOTALS_PY = """\
     1\tfrom decimal import Decimal, ROUND_HALF_UP
     2\t
     3\tfrom invoicely.models import Invoice
     4\t
     5\tCENT = Decimal("0.01")
     6\t
     7\t
     8\tdef _round(amount: Decimal) -> Decimal:
     9\t    return amount.quantize(CENT, rounding=ROUND_HALF_UP)
    10\t
    11\t
    12\tdef subtotal(invoice: Invoice) -> Decimal:
    13\t    return _round(sum((item.quantity * item.unit_price for item in invoice.items), Decimal("0")))
    14\t
    15\t
    16\tdef tax(invoice: Invoice) -> Decimal:
    17\t    # Tax is computed on the invoice total, then rounded once.
    18\t    raw = sum((item.quantity * item.unit_price * item.tax_rate for item in invoice.items), Decimal("0"))
    19\t    return _round(raw)
    20\t
    21\t
    22\tdef total(invoice: Invoice) -> Decimal:
    23\t    return subtotal(invoice) + tax(invoice)"""

SWE = Example("swe-failing-test-suite", "failing-test-suite", [
    Step("read_file path=invoicely/totals.py",
         "read_file returns numbered lines. totals.py was refactored: tax() now rounds once over the "
         "whole invoice, which explains 2.67 vs 2.66 (per-line rounding expected by the tests).",
         TOTALS_PY),
    Step('search pattern="def test_tax_rounds_per_line" path=tests',
         "A grep-style match list: path:line:text. The test is at line 27 of tests/test_totals.py, "
         "its failing assert at line 34 as the last run said.",
         "tests/test_totals.py:27:def test_tax_rounds_per_line():"),
    Step('{"name": "str_replace", "arguments": {"path": "invoicely/totals.py", '
         '"old_str": "    # Tax is computed on the invoice total, then rounded once.\\n    raw = sum((item.quantity * item.unit_price * item.tax_rate for item in invoice.items), Decimal(\\"0\\"))\\n    return _round(raw)", '
         '"new_str": "    # Each line\'s tax is rounded to the cent, as printed on the invoice.\\n    return sum((_round(item.quantity * item.unit_price * item.tax_rate) for item in invoice.items), Decimal(\\"0\\"))"}}',
         "str_replace succeeds when old_str occurs exactly once; it does. The tool reports the edit "
         "with a short snippet around it.",
         "The file invoicely/totals.py has been edited. Here's the result of running `cat -n` on a snippet:\n"
         "    14\t\n    15\t\n    16\tdef tax(invoice: Invoice) -> Decimal:\n"
         "    17\t    # Each line's tax is rounded to the cent, as printed on the invoice.\n"
         "    18\t    return sum((_round(item.quantity * item.unit_price * item.tax_rate) for item in invoice.items), Decimal(\"0\"))\n"
         "    19\t\n    20\t\n    21\tdef total(invoice: Invoice) -> Decimal:"),
    Step("run_tests tests/test_totals.py",
         "Per-line rounding gives 2.66 and 54.42, matching both asserts. test_totals.py had 6 tests "
         "(15 in total, test_models 4 and test_render 5): all 6 pass now.",
         "============================= test session starts ==============================\n"
         "platform linux -- Python 3.11.9, pytest-8.1.1, pluggy-1.5.0\n"
         "rootdir: /workspace/invoicely\nconfigfile: pyproject.toml\ncollected 6 items\n\n"
         "tests/test_totals.py ......                                              [100%]\n\n"
         "============================== 6 passed in 0.07s ===============================\n"
         "exit code: 0"),
])

# -- mcp ---------------------------------------------------------------------------------

CABIN_BODY = ("# Cabin info\n\n**Wi-Fi**: network `Birchwood-Guest`, password `lakeside-2291` (router is behind "
              "the bookshelf)\n\n**Heating**: thermostat in the hall, keep at 16 °C when away.\n\n"
              "**Keys**: lockbox by the woodshed, code 4712.")

MCP = Example("mcp-notes-server", "notes-mcp-server", [
    Step('search_notes query="wifi password cabin"',
         "search_notes is a search_* tool: a JSON result, no envelope. n_51c2 'Cabin info (Wi-Fi, heating, "
         "keys)' matches best; the packing list mentions the cabin but not the password.",
         as_json({"query": "wifi password cabin", "results": [
             {"id": "n_51c2", "title": "Cabin info (Wi-Fi, heating, keys)", "score": 0.91,
              "snippet": "**Wi-Fi**: network `Birchwood-Guest`, password `lakeside-2291` (router is behind the bookshelf)"},
             {"id": "n_7f3a", "title": "Cabin weekend - packing", "score": 0.34,
              "snippet": "... check the cabin info note for the Wi-Fi before we go ..."}]})),
    Step("read_note id=n_51c2",
         "read_note returns the whole note, body in Markdown, consistent with the snippet.",
         as_json({"id": "n_51c2", "title": "Cabin info (Wi-Fi, heating, keys)", "tags": ["travel", "home"],
                  "updated": "2024-04-28T09:40:55Z", "body": CABIN_BODY})),
    Step('{"name": "create_note", "arguments": {"title": "Cabin checklist", "body": "- [ ] Wi-Fi: see [[n_51c2]]\\n- [ ] Heating to 16 °C when leaving\\n- [ ] Keys back in the lockbox", "tags": ["travel"]}}',
         "create_note returns the new id. Ids so far are n_ plus 4 hex digits; pick a fresh one, n_9e04.",
         as_json({"id": "n_9e04", "title": "Cabin checklist", "created": "2024-05-03T08:12:44Z", "links": ["n_51c2"]})),
    Step("delete_note id=n_0000",
         "n_0000 is not in the store: a not-found error, as the tool's description says.",
         "status: error\nmessage: Note n_0000 was not found"),
])

# -- search ------------------------------------------------------------------------------

SEARCH = Example("search-fictional-city", "fictional-city", [
    Step('search "Port Veyra museum open Monday"',
         "Port Veyra results from the city's .pv sites. From the world description: the Eastlock Gallery "
         "of Light is open daily; the Maritime Museum and the Natural History Hall are closed on Mondays. "
         "Snippets hint, they do not answer everything.",
         "[1] https://portveyra.gov.pv/visit/museums\n"
         "Title: Museums and galleries - City of Port Veyra\n"
         "Snippet: Opening hours and prices of the city's museums. Please note that most museums are closed on Mondays...\n"
         "Date: N/A\n\n"
         "[2] https://galleryoflight.pv/visit\n"
         "Title: Plan your visit - Eastlock Gallery of Light\n"
         "Snippet: Open every day 10:00-18:00. Tickets 14 Kr; free entry on the first Sunday of the month...\n"
         "Date: Sep 2, 2024\n\n"
         "[3] https://veyra-courier.pv/life/rainy-day-ideas\n"
         "Title: Rainy day in Port Veyra? Five indoor ideas - Veyra Courier\n"
         "Snippet: From the Gallery of Light in Eastlock to the covered fish market at Saltgate, where to go when...\n"
         "Date: Mar 18, 2024\n\n"
         "[4] https://maritimemuseum.pv/\n"
         "Title: Maritime Museum Port Veyra\n"
         "Snippet: Tuesday-Sunday 10:00-17:00, closed Mondays. Old Quay 4. Ships, charts and the story of the harbour...\n"
         "Date: N/A\n\n"
         "[5] https://naturalhistoryhall.pv/en/hours\n"
         "Title: Opening hours - Veyra Natural History Hall\n"
         "Snippet: Wednesday to Sunday, 9:30-17:00. Closed Mondays and Tuesdays except on public holidays...\n"
         "Date: N/A"),
    Step("open https://galleryoflight.pv/visit",
         "web_extractor returns the page as Markdown, agreeing with the snippet. Eastlock is the former docks; "
         "trams T1-T4 and water buses W1-W2. Saltgate is the ferry terminal, so the W1 water bus from Saltgate "
         "to Eastlock is the natural link.",
         "# Plan your visit\n\n"
         "The Eastlock Gallery of Light shows light art and photography in a restored 1890s grain warehouse on "
         "Lock 3.\n\n"
         "## Opening hours\n\n"
         "| Day | Hours |\n|-----|-------|\n| Monday-Sunday | 10:00-18:00 (last entry 17:30) |\n\n"
         "## Tickets\n\n"
         "- Adults: 14 Kr\n- Students: 9 Kr\n- Under 16: free\n"
         "- Free entry for everyone on the first Sunday of the month\n\n"
         "## Getting here\n\n"
         "- **Water bus W1** to Eastlock Pier, then 3 minutes on foot along the quay.\n"
         "- **Tram T3** to Lockgate Square.\n\n"
         "> The gallery is fully accessible; lockers and a cafe are on the ground floor."),
    Step('search "PVT W1 water bus Saltgate Eastlock timetable"',
         "PVT is the transport operator; its W1 line page, the fares page and a review. A single ticket is "
         "3.20 Kr per the world description.",
         "[1] https://pvt.pv/lines/w1\n"
         "Title: W1 Harbour Line - Timetable - PVT\n"
         "Snippet: Saltgate Ferry Terminal - Old Quay - Eastlock Pier. Every 15 minutes, 06:30-23:00...\n"
         "Date: N/A\n\n"
         "[2] https://pvt.pv/tickets\n"
         "Title: Tickets and fares - PVT\n"
         "Snippet: A single ticket (3.20 Kr) is valid for 60 minutes on trams and water buses...\n"
         "Date: N/A\n\n"
         "[3] https://harbourlight.pv/2024/06/w1-review\n"
         "Title: The water bus is the best way to see the harbour - Harbourlight\n"
         "Snippet: Twelve minutes from Saltgate to Eastlock Pier, with a stop at Old Quay...\n"
         "Date: Jun 21, 2024"),
    Step('memory add plan "Eastlock Gallery of Light, open Mon 10-18, 14 Kr; W1 water bus Saltgate -> Eastlock Pier, every 15 min, 3.20 Kr"',
         "dict_memory add: store the value under 'plan' and confirm with the keys.",
         "Successfully added items of ['plan'] to memory."),
])

# -- web (with an undo branch) -----------------------------------------------------------

def product_page(bid: int, name: str, price: str, rating: str, detail: str, url: str) -> str:
    return (
        f"RootWebArea '{name} | Fernhill Outfitters', focused, url='{url}'\n"
        "\t[14] banner ''\n"
        "\t\t[15] link 'Fernhill Outfitters home', url='https://shop.fernhill.example/'\n"
        "\t\t[18] searchbox 'Search products'\n"
        "\t\t[19] button 'Search'\n"
        "\t\t[21] link 'Account: Sam Ortega', url='https://shop.fernhill.example/account'\n"
        "\t\t[22] link 'Cart, 0 items', url='https://shop.fernhill.example/cart'\n"
        f"\t[{bid}] main ''\n"
        f"\t\t[{bid + 1}] heading '{name}'\n"
        f"\t\tStaticText '{price}'\n"
        f"\t\tStaticText '{rating}'\n"
        f"\t\tStaticText '{detail}'\n"
        f"\t\t[{bid + 5}] radiogroup 'Size'\n"
        f"\t\t\t[{bid + 6}] radio 'S', checked='false'\n"
        f"\t\t\t[{bid + 7}] radio 'M', checked='false'\n"
        f"\t\t\t[{bid + 8}] radio 'L', checked='false'\n"
        f"\t\t\t[{bid + 9}] radio 'XL', checked='false'\n"
        f"\t\t[{bid + 11}] button 'Add to cart', disabled=True\n"
        f"\t\tStaticText 'Choose a size'\n"
    )


TARN = product_page(100, "Tarn Waterproof Hiking Jacket", "$139.00", "4.5 stars (201 reviews)",
                    "Waterproof 20,000 mm, taped seams, pit zips. Weight 410 g.",
                    "https://shop.fernhill.example/p/tarn-hiking")

WEB = Example("web-online-shop", "online-shop", [
    Step("click 67",
         "Link 67 is 'Drizzle Packable Rain Jacket'; it navigates to its product page. Header ids stay, new "
         "ids for the product content.",
         product_page(100, "Drizzle Packable Rain Jacket", "$79.00", "4.1 stars (88 reviews)",
                      "Water-resistant (DWR coating), packs into its own pocket. Not waterproof.",
                      "https://shop.fernhill.example/p/drizzle-packable")),
    UNDO,
    Step("click 72",
         "Link 72 is 'Tarn Waterproof Hiking Jacket' ($139, waterproof): the product page loads with a size "
         "picker; Add to cart stays disabled until a size is chosen.",
         TARN),
    Step("click 107",
         "Radio 107 is size M: it becomes checked, the size hint goes and Add to cart is enabled.",
         TARN.replace("[107] radio 'M', checked='false'", "[107] radio 'M', checked='true'")
             .replace("[111] button 'Add to cart', disabled=True", "[111] button 'Add to cart'")
             .replace("\t\tStaticText 'Choose a size'\n", "\t\tStaticText 'In stock: ships in 1-2 days'\n")),
    Step("click 111",
         "Add to cart: the cart count in the header becomes 1 and a confirmation dialog appears with new ids.",
         TARN.replace("[107] radio 'M', checked='false'", "[107] radio 'M', checked='true'")
             .replace("[111] button 'Add to cart', disabled=True", "[111] button 'Add to cart'")
             .replace("Cart, 0 items", "Cart, 1 item")
             .replace("\t\tStaticText 'Choose a size'\n", "")
         + "\t[120] dialog 'Added to your cart', modal=True\n"
           "\t\tStaticText 'Tarn Waterproof Hiking Jacket, size M, $139.00'\n"
           "\t\t[123] link 'View cart and check out', url='https://shop.fernhill.example/cart'\n"
           "\t\t[124] button 'Continue shopping'\n"),
])

# -- os ----------------------------------------------------------------------------------

def files_frame(location: str, rows: list[tuple[str, str, str]], status: str, extra: str = "") -> str:
    lines = [
        '<desktop-frame name="Desktop" screen="1920x1080">',
        '  <panel name="Top Bar" x="0" y="0" width="1920" height="32">',
        '    <label name="Clock" text="Wed 10 Apr  09:42" x="900" y="6" width="140" height="20"/>',
        "  </panel>",
        '  <application name="Files">',
        f'    <frame name="{location.split(" / ")[-1]}" x="320" y="120" width="1100" height="720" states="active">',
        '      <push-button name="Back" x="332" y="132" width="34" height="34"/>',
        f'      <label name="Location" text="{location}" x="420" y="138" width="300" height="22"/>',
        '      <table name="Files" x="530" y="178" width="890" height="662">',
    ]
    for index, (name, size, extra_attrs) in enumerate(rows):
        lines.append(f'        <table-row name="{name}" size="{size}" x="540" y="{200 + 34 * index}"{extra_attrs}/>')
    lines += ["      </table>", extra.rstrip("\n"), f'      <label name="Status" text="{status}" x="1280" y="816" width="130" height="18"/>',
              "    </frame>", "  </application>", "</desktop-frame>"]
    return "\n".join(line for line in lines if line)


DOWNLOADS = [("invoice-northwind-2024-01.pdf", "88.2 kB", ""), ("invoice-northwind-2024-02.pdf", "87.9 kB", ""),
             ("invoice-northwind-2024-03.pdf", "91.4 kB", ""), ("team-photo.jpg", "2.4 MB", ""),
             ("tax-receipt-2023.pdf", "140.6 kB", ""), ("ubuntu-22.04.4-desktop-amd64.iso", "4.9 GB", "")]

OS = Example("os-file-manager", "desktop-file-manager", [
    Step("click 330 256",
         "Documents in the Places sidebar: the Files window now shows Home / Documents with its three items.",
         files_frame("Home / Documents", [("Contracts", "4 items", ""), ("Invoices", "2 items", ""),
                                          ("cv-2023.odt", "34.0 kB", "")], "3 items")),
    Step("double_click 540 234",
         "Double-click on the Invoices row opens it: it holds folders 2022 and 2023, no 2024 yet.",
         files_frame("Home / Documents / Invoices", [("2022", "12 items", ""), ("2023", "12 items", "")], "2 items")),
    Step("hotkey ctrl shift n",
         "Ctrl+Shift+N in GNOME Files opens the New Folder dialog with the name field focused.",
         files_frame("Home / Documents / Invoices", [("2022", "12 items", ""), ("2023", "12 items", "")], "2 items",
                     '      <dialog name="New Folder" x="720" y="380" width="480" height="180" states="modal">\n'
                     '        <label name="Folder name" x="744" y="404"/>\n'
                     '        <text name="Folder name" text="Untitled Folder" x="744" y="432" width="432" height="34" states="focused,selected"/>\n'
                     '        <push-button name="Cancel" x="744" y="500" width="100" height="34"/>\n'
                     '        <push-button name="Create" x="1076" y="500" width="100" height="34"/>\n'
                     "      </dialog>")),
    Step('type "2024"',
         "Typing replaces the selected name: the field now reads 2024.",
         files_frame("Home / Documents / Invoices", [("2022", "12 items", ""), ("2023", "12 items", "")], "2 items",
                     '      <dialog name="New Folder" x="720" y="380" width="480" height="180" states="modal">\n'
                     '        <label name="Folder name" x="744" y="404"/>\n'
                     '        <text name="Folder name" text="2024" x="744" y="432" width="432" height="34" states="focused"/>\n'
                     '        <push-button name="Cancel" x="744" y="500" width="100" height="34"/>\n'
                     '        <push-button name="Create" x="1076" y="500" width="100" height="34"/>\n'
                     "      </dialog>")),
    Step("press enter",
         "Enter creates the folder; the dialog closes and 2024 appears selected in the list.",
         files_frame("Home / Documents / Invoices", [("2022", "12 items", ""), ("2023", "12 items", ""),
                                                     ("2024", "0 items", ' states="selected"')], "3 items")),
])

# -- android -----------------------------------------------------------------------------

def hierarchy(title: str, rows: list[tuple[str, str]], extra: str = "") -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<hierarchy rotation="0">',
             '  <node index="0" class="android.widget.FrameLayout" package="com.android.settings" bounds="[0,0][1080,2400]">',
             '    <node index="0" class="android.widget.ImageButton" content-desc="Navigate up" clickable="true" bounds="[0,136][147,283]"/>',
             f'    <node index="1" class="android.widget.TextView" text="{title}" bounds="[63,320][1017,430]"/>',
             '    <node index="2" class="androidx.recyclerview.widget.RecyclerView" resource-id="com.android.settings:id/recycler_view" scrollable="true" bounds="[0,480][1080,2337]">']
    for index, (text, summary) in enumerate(rows):
        top = 480 + 190 * index
        lines.append(f'      <node index="{index}" class="android.widget.LinearLayout" clickable="true" bounds="[0,{top}][1080,{top + 190}]">')
        lines.append(f'        <node class="android.widget.TextView" text="{text}" resource-id="android:id/title" bounds="[189,{top + 40}][800,{top + 99}]"/>')
        if summary:
            lines.append(f'        <node class="android.widget.TextView" text="{summary}" resource-id="android:id/summary" bounds="[189,{top + 99}][900,{top + 154}]"/>')
        lines.append("      </node>")
    lines += ["    </node>", extra.rstrip("\n"), "  </node>", "</hierarchy>"]
    return "\n".join(line for line in lines if line)


DISPLAY_ROWS = [("Brightness level", "48%"), ("Adaptive brightness", "On"), ("Dark theme", "Off"),
                ("Screen timeout", "After 30 seconds of inactivity"), ("Font size and text", ""),
                ("Auto-rotate screen", "Off")]

ANDROID = Example("android-settings", "settings-app", [
    Step("tap 540 1950",
         "The tap at (540, 1950) is inside the Display row [0,1852][1080,2054]: the Display settings page opens.",
         hierarchy("Display", DISPLAY_ROWS)),
    Step("tap 540 955",
         "Row 2 of the list is Dark theme [0,860][1080,1050]: tapping the row toggles it on; its summary changes.",
         hierarchy("Display", [row if row[0] != "Dark theme" else ("Dark theme", "On") for row in DISPLAY_ROWS])),
    Step("tap 540 1145",
         "Screen timeout row [0,1050][1080,1240]: a single-choice dialog opens with the current value checked.",
         hierarchy("Display", [row if row[0] != "Dark theme" else ("Dark theme", "On") for row in DISPLAY_ROWS],
                   '    <node class="android.widget.FrameLayout" resource-id="android:id/content" bounds="[84,760][996,1820]">\n'
                   '      <node class="android.widget.TextView" text="Screen timeout" bounds="[147,823][933,900]"/>\n'
                   + "".join(
                       f'      <node class="android.widget.CheckedTextView" text="{label}" checkable="true" checked="{str(label == "30 seconds").lower()}" clickable="true" bounds="[84,{940 + 126 * i}][996,{1066 + 126 * i}]"/>\n'
                       for i, label in enumerate(["15 seconds", "30 seconds", "1 minute", "2 minutes", "5 minutes", "10 minutes"]))
                   + '      <node class="android.widget.Button" text="Cancel" clickable="true" bounds="[756,1700][954,1790]"/>\n'
                   '    </node>')),
    Step("tap 540 1320",
         "(540, 1320) is '2 minutes' [84,1318][996,1444]: it is chosen, the dialog closes and the summary updates.",
         hierarchy("Display", [("Dark theme", "On") if row[0] == "Dark theme" else
                               ("Screen timeout", "After 2 minutes of inactivity") if row[0] == "Screen timeout" else row
                               for row in DISPLAY_ROWS])),
])

TERMINAL = Example("terminal-demo", "python-web-app", [
    Step('ls -la',
         'ls -la in the repository root: the usual files of a small Flask project (README, requirements, the package and its tests), then the prompt again.',
         'total 40\ndrwxr-xr-x 5 dev dev 4096 Nov 30 09:12 .\ndrwxr-xr-x 9 dev dev 4096 Nov 30 09:10 ..\ndrwxr-xr-x 8 dev dev 4096 Nov 30 09:14 .git\n-rw-r--r-- 1 dev dev   61 Nov 30 09:10 .gitignore\n-rw-r--r-- 1 dev dev  612 Nov 30 09:10 README.md\n-rw-r--r-- 1 dev dev   48 Nov 30 09:10 requirements.txt\ndrwxr-xr-x 2 dev dev 4096 Nov 30 09:11 tests\ndrwxr-xr-x 2 dev dev 4096 Nov 30 09:13 todo\ndev@laptop:~/todo-api$ '),
    Step('git status',
         'git status: on main, up to date with origin, one unstaged change in todo/store.py, which the scenario says breaks a test.',
         'On branch main\nYour branch is up to date with \'origin/main\'.\n\nChanges not staged for commit:\n  (use "git add <file>..." to update what will be committed)\n  (use "git restore <file>..." to discard changes in working directory)\n\tmodified:   todo/store.py\n\nno changes added to commit (use "git add" and/or "git commit -a")\ndev@laptop:~/todo-api$ '),
    Step('python -m pytest -q',
         'pytest -q: four tests, one fails. complete() no longer sets done, so test_complete_marks_done asserts False is True.',
         '..F.                                                                     [100%]\n=================================== FAILURES ===================================\n___________________________ test_complete_marks_done ___________________________\n\n    def test_complete_marks_done():\n        store = TodoStore()\n        item = store.add("write docs")\n        store.complete(item.id)\n>       assert store.get(item.id).done is True\nE       AssertionError: assert False is True\nE        +  where False = Todo(id=1, title=\'write docs\', done=False).done\n\ntests/test_store.py:21: AssertionError\n=========================== short test summary info ============================\nFAILED tests/test_store.py::test_complete_marks_done - AssertionError: assert False is True\n1 failed, 3 passed in 0.21s\ndev@laptop:~/todo-api$ '),
    Step('git diff',
         'git diff shows the uncommitted edit in TodoStore.complete: `item.done = True` became `item.done = item.done`.',
         'diff --git a/todo/store.py b/todo/store.py\nindex 3b1c2d4..8f0e9a1 100644\n--- a/todo/store.py\n+++ b/todo/store.py\n@@ -24,7 +24,7 @@ class TodoStore:\n     def complete(self, item_id: int) -> Todo:\n         item = self.get(item_id)\n-        item.done = True\n+        item.done = item.done\n         return item\n \ndev@laptop:~/todo-api$ '),
    Step('git checkout -- todo/store.py && python -m pytest -q',
         'The checkout restores store.py silently, then the suite runs again: all four tests pass.',
         '....                                                                     [100%]\n4 passed in 0.19s\ndev@laptop:~/todo-api$ '),
])

EXAMPLES = [TERMINAL, SWE, MCP, SEARCH, WEB, OS, ANDROID]


def build(example: Example, out: Path) -> None:
    scenario = load_scenario(example.scenario)
    settings = scenario.apply(SessionSettings(sampling=SamplingConfig(), think=ThinkBudget.parse("full"), seed=0))
    domain = with_session_tools(get_domain(scenario.domain), settings.tools)
    answers = [ScriptedAnswer(answer(step)) for step in example.steps if step is not None]
    world = World(ScriptedBackend(answers), domain, settings)
    with tempfile.TemporaryDirectory() as tmp:
        draft = Path(tmp) / "draft.jsonl"
        header = replace(header_for(world, scenario=scenario.ref(), note=NOTE), model=None, hand_written=True,
                         created=CREATED, sampling={})
        session = Session(world, TrajectoryWriter.create(draft, header), header)
        for step in example.steps:
            if step is None:
                session.undo()
                continue
            for _event in session.step(step.action):
                pass
        session.close()
        _rewrite(read_trajectory(draft), out)


def _rewrite(traj, out: Path) -> None:
    """The same session through TrajectoryWriter again, without what was not measured."""
    clock = writer_module.utc_now
    writer_module.utc_now = lambda: CREATED  # undo lines get the same fixed time as the turns
    try:
        writer = TrajectoryWriter.create(out, traj.header, overwrite=True)
        branch_ids: list[int] = []
        for record in traj.turns:
            # An undo happened where a turn's parent is not the last turn written.
            while branch_ids and record.parent != branch_ids[-1]:
                branch_ids.pop()
                writer.record_undo(len(branch_ids))
            writer.append(replace(record, id=0, tokens={}, timings={}, created=CREATED))
            branch_ids.append(record.id)
        writer.close()
    finally:
        writer_module.utc_now = clock


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Only check that the files are up to date.")
    args = parser.parse_args()
    stale = []
    for example in EXAMPLES:
        target = OUT_DIR / f"{example.name}.jsonl"
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = Path(tmp) / target.name
                build(example, fresh)
                if not target.exists() or fresh.read_bytes() != target.read_bytes():
                    stale.append(target.name)
        else:
            build(example, target)
            print(f"wrote {target}")
    if stale:
        print("out of date: " + ", ".join(stale) + " (run assets/examples/make_examples.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
