"""Queues of the snapshot notification tests, on the moto server.

    sqs.py notify ENDPOINT BUCKET QUEUE   create QUEUE and send every object
                                          notification of BUCKET to it; print its URL
    sqs.py count ENDPOINT QUEUE_URL       print how many messages the queue holds
                                          (visible and in flight)

Run with the Python of moto's virtualenv (it has boto3).
"""
import sys

import boto3


def client(service, endpoint):
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def notify(endpoint, bucket, queue):
    sqs = client("sqs", endpoint)
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    client("s3", endpoint).put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={
            "QueueConfigurations": [
                {"QueueArn": arn, "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]}
            ]
        },
    )
    print(url)


def count(endpoint, url):
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = client("sqs", endpoint).get_queue_attributes(
        QueueUrl=url, AttributeNames=names
    )["Attributes"]
    print(sum(int(attributes[name]) for name in names))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"notify": notify, "count": count}[command](*args)
