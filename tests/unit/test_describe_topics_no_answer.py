"""A DescribeTopics no broker answered is no evidence that a topic is missing: it ends with
:class:`KafkaNoAnswerError` naming the brokers and the request (design note 82).

Before, librdkafka's own ``_TIMED_OUT`` / ``_TRANSPORT`` on the request passed as "not refused", and health and
verify went on to report the topic missing; only the caller's own wait running out was classified.
"""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeoutError

import pytest
from confluent_kafka import KafkaError, KafkaException

from airflow_provider_eos.core.errors import AclMissingError, KafkaNoAnswerError
from airflow_provider_eos.kafka.denials import raise_if_topics_refused
from tests.support.silent_admin import BROKERS, TIMED_OUT, TRANSPORT, SilentAdmin


@pytest.mark.parametrize("error", [TIMED_OUT, TRANSPORT, FutureTimeoutError()], ids=["timed-out", "transport", "wait"])
def test_an_unanswered_describe_names_the_brokers_and_the_topic(error: BaseException) -> None:
    with pytest.raises(KafkaNoAnswerError) as raised:
        raise_if_topics_refused(SilentAdmin(describe=error), ["orders-x"], timeout_s=3, brokers=BROKERS)
    assert raised.value.message.startswith(
        f"DescribeTopics('orders-x'): no answer from the Kafka broker(s) at {BROKERS} within 3 s"), raised.value
    assert raised.value.retryable


def test_a_refused_describe_still_names_the_acl_and_an_unknown_topic_passes() -> None:
    refused = KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed"))
    with pytest.raises(AclMissingError):
        raise_if_topics_refused(SilentAdmin(describe=refused), ["orders-x"], timeout_s=3, brokers=BROKERS,
                                settings={"bootstrap.servers": BROKERS, "sasl.username": "health"})
    unknown = KafkaException(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "Broker: Unknown topic or partition"))
    raise_if_topics_refused(SilentAdmin(describe=unknown), ["orders-x"], timeout_s=3, brokers=BROKERS)
