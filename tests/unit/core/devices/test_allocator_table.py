"""Upstream's structured-allocator table, part 1: simple requests, All, admin access, network-attached devices,
constraints, config and bad input. Case names and expectations are upstream's.

Oracle: staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/allocator_testing.go,
`TestAllocator` test cases (run against the "stable" allocator: features AdminAccess and PrioritizedList).
Part 2 (firstAvailable, multi-host pools, invalid pools, combinations) and the list of skipped cases with their
reasons: test_allocator_table_more.py.
"""

from __future__ import annotations

import pytest

from gangsched.core.devices import DeviceClass, DeviceID, DeviceRequest, ExactRequest
from tests.unit.core.devices.upstream import (
    ADMIN,
    BOOL_ATTR,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEV0,
    DEV1,
    DEV2,
    DEV3,
    DRIVER_A,
    DRIVER_B,
    INT_ATTR,
    MAX,
    NODE1,
    NODE2,
    NON_EXISTENT_ATTR,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    STRING_ATTR,
    VERSION_ATTR,
    Case,
    all_request,
    alloc,
    claim,
    claim_config,
    claim_with_request,
    class_,
    class_cfg,
    device,
    label_selector,
    local_selector,
    many_devices,
    many_results,
    match,
    memory,
    node,
    one_device,
    request,
    res,
    run_case,
    slice_,
    version,
)

A, B = class_(CLASS_A, DRIVER_A), class_(CLASS_B, DRIVER_B)
N1 = local_selector(NODE1)


def _small_large(first: str, second: str) -> tuple[object, ...]:
    return (
        slice_(
            SLICE1,
            NODE1,
            POOL1,
            DRIVER_A,
            device(first, {"memory": "1Gi" if first == DEV1 else "2Gi"}),
            device(second, {"memory": "1Gi" if second == DEV1 else "2Gi"}),
        ),
    )


def _attrs(**values: object) -> dict[str, object]:
    return dict(values)


_ALL_FOUR = {
    "driverVersion": version("1.0.0"),
    "numa": 1,
    "stringAttribute": "stringAttributeValue",
    "boolAttribute": True,
}

CASES: dict[str, Case] = {
    "empty": Case(),
    "simple": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "other-node": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_B), one_device(SLICE2, NODE2, POOL2, DRIVER_A)],
        node=node(NODE2, REGION2),
        expect=[alloc(local_selector(NODE2), res(REQ0, DRIVER_A, POOL2, DEV1))],
    ),
    "small-and-large": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, memory("1Gi")), request(REQ1, CLASS_A, 1, memory("2Gi")))],
        classes=[A],
        slices=_small_large(DEV1, DEV2),  # type: ignore[arg-type]
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1), res(REQ1, DRIVER_A, POOL1, DEV2))],
    ),
    "small-and-large-backtrack-requests": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, memory("1Gi")), request(REQ1, CLASS_A, 1, memory("2Gi")))],
        classes=[A],
        slices=_small_large(DEV2, DEV1),  # type: ignore[arg-type]
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1), res(REQ1, DRIVER_A, POOL1, DEV2))],
    ),
    "small-and-large-backtrack-claims": Case(
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, 1, memory("1Gi"))),
            claim(CLAIM1, request(REQ1, CLASS_A, 1, memory("2Gi"))),
        ],
        classes=[A],
        slices=_small_large(DEV2, DEV1),  # type: ignore[arg-type]
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1)), alloc(N1, res(REQ1, DRIVER_A, POOL1, DEV2))],
    ),
    "devices-split-across-different-slices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE2, NODE1, POOL2, DRIVER_A)],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1), res(REQ0, DRIVER_A, POOL2, DEV1))],
    ),
    "obsolete-slice": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            slice_("slice-1-obsolete", NODE1, (POOL1, 2), DRIVER_A, device(DEV1)),
            slice_("slice-1-obsolete", NODE1, (POOL1, 2), DRIVER_A, device(DEV2), gen=2),
        ],
        expect=[],
    ),
    "duplicate-slice": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[
            one_device(SLICE1, NODE1, (POOL1, 2), DRIVER_A),
            one_device(SLICE1 + "-2", NODE1, (POOL1, 2), DRIVER_A),
        ],
        error="invalid resource pools were encountered",
    ),
    "no-slices": Case(claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)], classes=[A]),
    "not-enough-suitable-devices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A), claim_with_request(CLAIM0, REQ1, CLASS_A)],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "no-classes": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="could not retrieve device class class-a",
    ),
    "unknown-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, "unknown-class")],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="could not retrieve device class unknown-class",
    ),
    "empty-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, "")],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: missing device class name (unsupported request type?)",
    ),
    "no-claims-to-allocate": Case(classes=[A], slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)]),
    "all-devices-single": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "all-devices-many": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL2, DRIVER_A)],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1), res(REQ0, DRIVER_A, POOL2, DEV1))],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, (POOL1, 2), DRIVER_A)],
        error="claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently "
        "being updated",
    ),
    "all-devices-plus-another": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B, 1))],
        classes=[A, B],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1)), alloc(N1, res(REQ0, DRIVER_B, POOL1, DEV1))],
    ),
    "all-devices-plus-another-reversed": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_B, 1)), claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A, B],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A), one_device(SLICE1, NODE1, POOL1, DRIVER_B)],
        expect=[alloc(N1, res(REQ0, DRIVER_B, POOL1, DEV1)), alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "all-devices-many-plus-another": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B, 1))],
        classes=[A, B],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2)),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1), res(REQ0, DRIVER_A, POOL1, DEV2)),
            alloc(N1, res(REQ0, DRIVER_B, POOL1, DEV1)),
        ],
    ),
    "all-devices-many-plus-another-reversed": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_B, 1)), claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A, B],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2)),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[
            alloc(N1, res(REQ0, DRIVER_B, POOL1, DEV1)),
            alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1), res(REQ0, DRIVER_A, POOL1, DEV2)),
        ],
    ),
    "all-devices-no-solution": Case(
        claims=[claim(CLAIM1, request(REQ0, CLASS_A, 1)), claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "all-devices-no-solution-reversed": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A, 1))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "all-devices-slice-without-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "all-devices-no-slices": Case(claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))], classes=[A]),
    "all-devices-some-allocated": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        allocated=[DeviceID(DRIVER_A, POOL1, DEV1)],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))],
    ),
    "all-devices-some-allocated-admin-access": Case(
        features=ADMIN,
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, admin=True))],
        allocated=[DeviceID(DRIVER_A, POOL1, DEV1)],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1, True), res(REQ0, DRIVER_A, POOL1, DEV2, True))],
    ),
    "all-devices-some-allocating-admin-access": Case(
        features=ADMIN,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True), all_request(REQ1, CLASS_A, admin=True))],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))],
    ),
    "count-devices-some-allocated-admin-access": Case(
        features=ADMIN,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2, admin=True))],
        allocated=[DeviceID(DRIVER_A, POOL1, DEV1)],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1, True), res(REQ0, DRIVER_A, POOL1, DEV2, True))],
    ),
    "separate-claims-share-device-admin-access": Case(
        features=ADMIN,
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True)),
            claim(CLAIM1, request(REQ0, CLASS_A, 1, admin=True)),
        ],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1, True)), alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1, True))],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        features=ADMIN,
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A), claim(CLAIM1, request(REQ0, CLASS_A, 1, admin=True))],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1)), alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1, True))],
    ),
    "network-attached-device": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[one_device(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A)],
        expect=[alloc(label_selector("region", REGION1), res(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[one_device(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A)],
        node=node(NODE2, REGION2),
    ),
    "many-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 4))],
        classes=[A],
        slices=[
            one_device(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A),
            one_device(SLICE1, "nodeSelectionAll", POOL2, DRIVER_A),
            one_device(SLICE1, label_selector("planet", "earth"), POOL3, DRIVER_A),
            one_device(SLICE1, local_selector(NODE1), POOL4, DRIVER_A),
        ],
        expect=[
            alloc(
                (
                    label_selector("region", REGION1)[0]._replace(
                        expressions=label_selector("region", REGION1)[0].expressions
                        + label_selector("planet", "earth")[0].expressions,
                        fields=local_selector(NODE1)[0].fields,
                    ),
                ),
                res(REQ0, DRIVER_A, POOL1, DEV1),
                res(REQ0, DRIVER_A, POOL2, DEV1),
                res(REQ0, DRIVER_A, POOL3, DEV1),
                res(REQ0, DRIVER_A, POOL4, DEV1),
            )
        ],
    ),
    "local-and-network-attached-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[A],
        slices=[
            one_device(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A),
            one_device(SLICE1, NODE1, POOL2, DRIVER_A),
        ],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1), res(REQ0, DRIVER_A, POOL2, DEV1))],
    ),
    "several-different-drivers": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A), claim_with_request(CLAIM0, REQ0, CLASS_B)],
        classes=[A, B],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2)),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1)), alloc(N1, res(REQ0, DRIVER_B, POOL1, DEV1))],
    ),
    "already-allocated-devices": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        allocated=[DeviceID(DRIVER_A, POOL1, DEV1), DeviceID(DRIVER_A, POOL1, DEV2)],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "admin-access-disabled": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: admin access is requested, but the feature is disabled",
    ),
    "admin-access-enabled": Case(
        features=ADMIN,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True))],
        allocated=[DeviceID(DRIVER_A, POOL1, DEV1), DeviceID(DRIVER_A, POOL1, DEV2)],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1, True))],
    ),
    "with-constraint": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                constraints=[match(INT_ATTR), match(VERSION_ATTR), match(STRING_ATTR), match(BOOL_ATTR)],
            )
        ],
        classes=[A],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1, None, _ALL_FOUR), device(DEV2, None, _ALL_FOUR))],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1), res(REQ1, DRIVER_A, POOL1, DEV2))],
    ),
    "with-constraint-non-existent-attribute": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A, match(NON_EXISTENT_ATTR))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "with-constraint-not-matching-int-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(INT_ATTR)])],
        classes=[A, B],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1, None, {"numa": 1}), device(DEV2, None, {"numa": 2}))
        ],
    ),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A), constraints=[match(INT_ATTR)])],
        classes=[A, B],
        slices=[
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1, None, {"numa": 1}), device(DEV2, None, {"numa": 2}))
        ],
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint "
        "would not be satisfied",
    ),
    "with-constraint-not-matching-string-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(STRING_ATTR)])],
        classes=[A, B],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, None, {"stringAttribute": "stringAttributeValue"}),
                device(DEV2, None, {"stringAttribute": "stringAttributeValue2"}),
            )
        ],
    ),
    "with-constraint-not-matching-bool-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(BOOL_ATTR)])],
        classes=[A, B],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, None, {"boolAttribute": True}),
                device(DEV2, None, {"boolAttribute": False}),
            )
        ],
    ),
    "with-constraint-not-matching-version-attribute": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=[match(VERSION_ATTR)])],
        classes=[A, B],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, None, {"driverVersion": version("1.0.0")}),
                device(DEV2, None, {"driverVersion": version("2.0.0")}),
            )
        ],
    ),
    "with-constraint-for-request": Case(
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1), constraints=[match(VERSION_ATTR, REQ0)])
        ],
        classes=[A, B],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, None, {"driverVersion": version("1.0.0")}),
                device(DEV2, None, {"driverVersion": version("2.0.0")}),
            )
        ],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1), res(REQ1, DRIVER_A, POOL1, DEV2))],
    ),
    "with-constraint-for-request-retry": Case(
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request(REQ1, CLASS_A, 1),
                constraints=[match(VERSION_ATTR, REQ0), match(STRING_ATTR)],
            )
        ],
        classes=[A, B],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, None, {"driverVersion": version("1.0.0"), "stringAttribute": "a"}),
                device(DEV2, None, {"driverVersion": version("2.0.0"), "stringAttribute": "b"}),
                device(DEV3, None, {"driverVersion": version("3.0.0"), "stringAttribute": "b"}),
            )
        ],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV2), res(REQ1, DRIVER_A, POOL1, DEV3))],
    ),
    "with-class-device-config": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[class_(CLASS_A, DRIVER_A, "classAttribute")],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1), config=[class_cfg([REQ0], DRIVER_A, "classAttribute")])],
    ),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1), request(REQ2, CLASS_B, 1))],
        classes=[class_(CLASS_A, DRIVER_A, "classAttribute-A"), class_(CLASS_B, DRIVER_B, "classAttribute-B")],
        slices=[many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2), one_device(SLICE2, NODE1, POOL1, DRIVER_B)],
        expect=[
            alloc(
                N1,
                res(REQ0, DRIVER_A, POOL1, DEV0),
                res(REQ1, DRIVER_A, POOL1, DEV1),
                res(REQ2, DRIVER_B, POOL1, DEV1),
                config=[
                    class_cfg([REQ0, REQ1], DRIVER_A, "classAttribute-A"),
                    class_cfg([REQ2], DRIVER_B, "classAttribute-B"),
                ],
            )
        ],
    ),
    "claim-with-device-config": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), config=[claim_config([], DRIVER_A, "deviceAttribute")])],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[
            alloc(
                N1, res(REQ0, DRIVER_A, POOL1, DEV1), config=[class_cfg([], DRIVER_A, "deviceAttribute", "FromClaim")]
            )
        ],
    ),
    "unknown-selector": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, None))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="CEL expression empty (unsupported selector type?)",
    ),
    "unknown-allocation-mode": Case(
        claims=[claim(CLAIM0, DeviceRequest(REQ0, ExactRequest(REQ0, CLASS_A, (), "future-mode", 1)))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="unsupported count mode future-mode",
    ),
    "unknown-constraint": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A, match(None))],  # type: ignore[arg-type]
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="empty constraint (unsupported constraint type?)",
    ),
    "invalid-CEL-one-device": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, "noSuchVar"))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference",
    ),
    "invalid-CEL-one-device-class": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[DeviceClass(CLASS_A, ("noSuchVar",))],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference",
    ),
    "invalid-CEL-all-devices": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A, "noSuchVar"))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference",
    ),
    "too-many-devices-single-request": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))],
        classes=[A],
        error="exceeds the claim limit",
    ),
    "many-devices-okay": Case(claims=[claim(CLAIM0, request(REQ0, CLASS_A, MAX))], classes=[A]),
    "too-many-devices-total": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, MAX), request(REQ1, CLASS_A, 1))],
        classes=[A],
        slices=[many_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX + 1)],
        error="exceeds the claim limit",
    ),
    "all-devices-invalid-CEL": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 500))],
        classes=[A],
        error="exceeds the claim limit",
    ),
    "max-number-devices": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, MAX))],
        classes=[A],
        slices=[many_devices(SLICE1, NODE1, POOL1, DRIVER_A, MAX)],
        expect=[alloc(N1, *many_results(REQ0, DRIVER_A, POOL1, MAX, 0))],
    ),
    # DRADeviceTaints disabled: taints are ignored, so these run without modelling taints (gangsched does not
    # parse device taints yet: the devices below are upstream's minus their taints)
    "tainted-disabled": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "tainted-admin-access-disabled": Case(
        features=ADMIN,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1, admin=True))],
        allocated=[DeviceID(DRIVER_A, POOL1, DEV1), DeviceID(DRIVER_A, POOL1, DEV2)],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1, True))],
    ),
    "tainted-all-devices-single-disabled": Case(
        claims=[claim(CLAIM0, all_request(REQ0, CLASS_A))],
        classes=[A],
        slices=[one_device(SLICE1, NODE1, POOL1, DRIVER_A)],
        expect=[alloc(N1, res(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_upstream_case(name: str) -> None:
    run_case(CASES[name])
